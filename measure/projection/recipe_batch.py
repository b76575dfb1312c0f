"""RecipeBatch: many recipes as parallel numpy arrays over the axes a search varies.

Why arrays: the solver prices millions of recipes that differ only in TP/PP/VPP/CP/EP/ETP/MBS/SP,
recompute, schedule, DP sharding, the pipeline split and the overlap / dispatcher choices; one array per
axis (enums as indices into SCHEDULES / SHARDINGS / DISPATCHERS) lets measure.projection.vectorized price them with
gathers instead of Python loops.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional, Sequence

import numpy as np

from constraints.spec import DataParallelSharding, MoeDispatcher, PipelineSchedule, Recipe, Recompute

SCHEDULES: tuple[PipelineSchedule, ...] = tuple(PipelineSchedule)          # RecipeBatch.schedule indexes this
SHARDINGS: tuple[DataParallelSharding, ...] = tuple(DataParallelSharding)  # RecipeBatch.dp_sharding indexes this
DISPATCHERS: tuple[MoeDispatcher, ...] = tuple(MoeDispatcher)              # RecipeBatch.moe_dispatcher indexes this
INT_AXES = ("tp", "pp", "vpp", "cp", "ep", "etp", "mbs")
# optional batch axes (None = every row takes `base`'s value): batch field -> (Recipe field, array -> Recipe value)
OPTIONAL_AXES = {
    "tp_comm_overlap": ("tp_comm_overlap", bool),
    "moe_dispatcher": ("moe_dispatcher", lambda i: DISPATCHERS[int(i)]),
    "ep_overlap": ("overlap_moe_expert_parallel_comm", bool),
    "first_stage_layers": ("first_stage_layers", lambda n: int(n) or None),
    "last_stage_layers": ("last_stage_layers", lambda n: int(n) or None),
}
_TO_ARRAY = {"tp_comm_overlap": bool, "moe_dispatcher": DISPATCHERS.index, "ep_overlap": bool,
             "first_stage_layers": lambda n: n or 0, "last_stage_layers": lambda n: n or 0}
_ARRAYS = ("tp", "pp", "vpp", "cp", "ep", "etp", "mbs", "sp", "recompute", "schedule", "dp_sharding", "acc_split")


@dataclass
class RecipeBatch:
    """N recipes as parallel arrays; recipe i is `base` with these axes replaced (see `recipe(i)`).

    tp, pp, vpp, cp, ep, mbs: int arrays; etp: int array, 0 = None (expert TP follows TP);
    sp: bool (`--sequence-parallel`, ignored at TP=1); acc_split: bool (account for embedding and loss in
    the pipeline split); recompute: index into `recompute_choices`; schedule: index into SCHEDULES;
    dp_sharding: index into SHARDINGS. Optional (None = `base`'s): tp_comm_overlap, ep_overlap
    (`--overlap-moe-expert-parallel-comm`): bool; moe_dispatcher: index into DISPATCHERS;
    first_stage_layers / last_stage_layers: int, 0 = None. Every other Recipe field is `base`'s."""

    tp: np.ndarray
    pp: np.ndarray
    vpp: np.ndarray
    cp: np.ndarray
    ep: np.ndarray
    etp: np.ndarray
    mbs: np.ndarray
    sp: np.ndarray
    recompute: np.ndarray
    schedule: np.ndarray
    dp_sharding: np.ndarray
    acc_split: np.ndarray
    tp_comm_overlap: Optional[np.ndarray] = None
    moe_dispatcher: Optional[np.ndarray] = None
    ep_overlap: Optional[np.ndarray] = None
    first_stage_layers: Optional[np.ndarray] = None
    last_stage_layers: Optional[np.ndarray] = None
    recompute_choices: tuple[Recompute, ...] = (Recompute(),)
    base: Recipe = field(default_factory=Recipe)

    def __len__(self) -> int:
        return len(self.tp)

    def column(self, name: str) -> np.ndarray:
        """An optional axis as an array of len(self), filled from `base` when the batch leaves it None."""
        arr = getattr(self, name)
        if arr is not None:
            return np.asarray(arr)
        return np.full(len(self), _TO_ARRAY[name](getattr(self.base, OPTIONAL_AXES[name][0])))

    def recipe(self, i: int) -> Recipe:
        """The scalar Recipe of row i (what `project` would be called with)."""
        etp = int(self.etp[i])
        acc = bool(self.acc_split[i])
        optional = {f: conv(getattr(self, name)[i]) for name, (f, conv) in OPTIONAL_AXES.items() if getattr(self, name) is not None}
        return self.base.model_copy(update={
            "tp": int(self.tp[i]), "pp": int(self.pp[i]), "vpp": int(self.vpp[i]), "cp": int(self.cp[i]),
            "ep": int(self.ep[i]), "etp": etp or None, "mbs": int(self.mbs[i]), "sequence_parallel": bool(self.sp[i]),
            "recompute": self.recompute_choices[int(self.recompute[i])], "schedule": SCHEDULES[int(self.schedule[i])],
            "dp_sharding": SHARDINGS[int(self.dp_sharding[i])], "account_for_embedding_in_pipeline_split": acc,
            "account_for_loss_in_pipeline_split": acc, **optional})

    @classmethod
    def from_recipes(cls, recipes: Sequence[Recipe]) -> "RecipeBatch":
        """Pack recipes that differ only in the batch axes (raises ValueError naming a differing field)."""
        axis_fields = {"tp", "pp", "vpp", "cp", "ep", "etp", "mbs", "sequence_parallel", "recompute", "schedule",
                       "dp_sharding", "account_for_embedding_in_pipeline_split", "account_for_loss_in_pipeline_split"}
        axis_fields |= {f for f, _ in OPTIONAL_AXES.values()}
        base = recipes[0]
        rest = {k: v for k, v in base.model_dump().items() if k not in axis_fields}
        choices: list[Recompute] = []
        for r in recipes:
            other = {k: v for k, v in r.model_dump().items() if k not in axis_fields}
            if other != rest:
                bad = next(k for k in rest if rest[k] != other[k])
                raise ValueError(f"RecipeBatch.from_recipes: recipes differ in {bad}, which is not a batch axis; batch them apart")
            if r.account_for_embedding_in_pipeline_split != r.account_for_loss_in_pipeline_split:
                raise ValueError("RecipeBatch.from_recipes: account_for_embedding/loss_in_pipeline_split differ; set both or neither")
            if r.recompute not in choices:
                choices.append(r.recompute)

        def arr(f, dtype=np.int64):
            return np.array([f(r) for r in recipes], dtype=dtype)

        optional = {name: arr(lambda r, f=f, name=name: _TO_ARRAY[name](getattr(r, f)), bool if _TO_ARRAY[name] is bool else np.int64)
                    for name, (f, _) in OPTIONAL_AXES.items()}
        return cls(tp=arr(lambda r: r.tp), pp=arr(lambda r: r.pp), vpp=arr(lambda r: r.vpp), cp=arr(lambda r: r.cp),
                   ep=arr(lambda r: r.ep), etp=arr(lambda r: r.etp or 0), mbs=arr(lambda r: r.mbs),
                   sp=arr(lambda r: r.sequence_parallel, bool), recompute=arr(lambda r: choices.index(r.recompute)),
                   schedule=arr(lambda r: SCHEDULES.index(r.schedule)), dp_sharding=arr(lambda r: SHARDINGS.index(r.dp_sharding)),
                   acc_split=arr(lambda r: r.account_for_embedding_in_pipeline_split, bool), **optional,
                   recompute_choices=tuple(choices), base=base)


def slice_batch(batch: RecipeBatch, lo: int, hi: int) -> RecipeBatch:
    if lo == 0 and hi == len(batch):
        return batch
    arrays = {k: np.asarray(getattr(batch, k))[lo:hi] for k in _ARRAYS}
    arrays.update({k: None if getattr(batch, k) is None else np.asarray(getattr(batch, k))[lo:hi] for k in OPTIONAL_AXES})
    return RecipeBatch(**arrays, recompute_choices=batch.recompute_choices, base=batch.base)
