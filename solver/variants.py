"""MoE communication variants: the token dispatcher and EP communication overlap, chosen per candidate.

Why not two more table axes: under the memory model neither choice changes a byte (constraints/memory/per_rank.py reads
neither `moe_dispatcher` nor `overlap_moe_expert_parallel_comm`), and only two rules read them, so for every
(activation row, sharding) candidate the best legal variant is decided alone: the one with the smallest
ranking time. That inner minimisation is exact for every objective the solver ranks by (time first; memory
ties between variants, broken by time) and keeps the tables the size they were; the variant becomes part of
the candidate's recipe (`Tables.recipe`) and `check` re-verifies it like every other field. User pins
(`--moe-dispatcher`, `--ep-comm-overlap`) narrow the variant list in the space before anything is priced.

Legality: the rules that read these fields are listed in VARIANT_RULES (tests/solver/tables/test_solver_rules_factored.py
holds the solver's verdicts equal to check_rules on every full recipe); a variant is legal for a row when
they all hold, every other rule being the base recipe's (it does not read the variant). Hardware: the flex
dispatcher's DeepEP / HybridEP backends run on NVIDIA Hopper and newer (DeepEP README: "Hopper GPUs"; the
HybridEP backend targets Blackwell NVL72), so flex is tried only on CUDA compute capability >= 9.0.
"""
from __future__ import annotations

import numpy as np

from constraints.rules.features import flex_hardware_gap
from constraints.rules.registry import RULES, RuleInput
from constraints.spec import MoeDispatcher
from solver.tables.rules import unvalidated_recipe

VARIANT_RULES = ("shared_expert_overlap_dispatcher", "ep_comm_overlap", "flex_dispatcher_group", "flex_dispatcher_hardware")
DEFAULT = ("alltoall", False)  # Megatron recipes' dispatcher for MoE and no EP overlap: the rows' own recipe


def supports_flex(profile) -> bool:
    """The flex dispatcher's DeepEP / HybridEP backends run on NVIDIA compute capability >= 9.0. No profile (None) allows
    it; a profile without a compute capability does not (it cannot show it has one)."""
    return profile is None or not flex_hardware_gap(profile)


def space_variants(space, profile) -> list[tuple[str, bool]]:
    """(dispatcher, EP overlap) pairs to try: the space's two variant domains (pins included), flex dropped where its
    backends do not run; a dense model has no token dispatch, so only the default (any pin there changes nothing)."""
    if not space.model.is_moe:
        return [DEFAULT]
    disp = [d for d in space.domains.get("moe_dispatcher", ["alltoall"]) if d != "flex" or supports_flex(profile)]
    return variants_of({"moe_dispatcher": disp, "ep_comm_overlap": space.domains.get("ep_comm_overlap", [False])})


def variants_of(domains: dict) -> list[tuple[str, bool]]:
    """(dispatcher, EP overlap) pairs to try, in the space's order (the default first when allowed)."""
    return [(d, o) for d in domains.get("moe_dispatcher", ["alltoall"]) for o in domains.get("ep_comm_overlap", [False])]


def _rule_fns() -> tuple:
    return tuple(fn for fn in RULES if fn.__name__ in VARIANT_RULES)


def variant_fields(variant: tuple[str, bool]) -> dict:
    return {"moe_dispatcher": MoeDispatcher(variant[0]), "overlap_moe_expert_parallel_comm": bool(variant[1])}


# Recipe fields the solver varies per activation row -> the row column (solver/tables/time.py `row_columns`) that holds them;
# every other field a variant rule may read is the base recipe's, the same on every row
ROW_COLUMNS = {"tp": ("tp",), "pp": ("pp",), "vpp": ("vpp",), "cp": ("cp",), "ep": ("ep",), "etp": ("etp", "tp"),
               "mbs": ("mbs",), "sequence_parallel": ("sp", "tp"), "recompute": ("rc",), "schedule": ("sched",),
               "tp_comm_overlap": ("tpo",), "account_for_embedding_in_pipeline_split": ("acc",),
               "account_for_loss_in_pipeline_split": ("acc",), "first_stage_layers": ("first",), "last_stage_layers": ("last",)}
PER_CANDIDATE = {"dp_sharding", "overlap_param_gather"}  # vary per candidate, not per row: no variant rule may read them


def key_columns() -> list[str]:
    """Row columns the variant rules' verdicts depend on, from the fields they declare they read
    (constraints.rules.registry.rule(reads=...)); every row column when a rule declares nothing."""
    cols: set[str] = set()
    for fn in _rule_fns():
        reads = getattr(fn, "reads", None)
        if reads is None:
            return sorted({c for v in ROW_COLUMNS.values() for c in v})
        if reads & PER_CANDIDATE:
            raise RuntimeError(f"variant rule {fn.__name__} reads {sorted(reads & PER_CANDIDATE)}: a per-candidate field")
        for f in reads:
            cols.update(ROW_COLUMNS.get(f, ()))
    return sorted(cols)


def legal_variants(space, profile, recipe_of_row, keys: np.ndarray, variants: list) -> np.ndarray:
    """[row, variant] bool: the variant rules hold for row i's recipe. Verdicts are computed once per distinct
    key (the `key_columns` of each row), on the recipe `recipe_of_row(i)` of the key's first row."""
    fns = _rule_fns()
    out = np.zeros((len(keys), len(variants)), dtype=bool)
    if not len(keys):
        return out
    first, inv = _groups(keys)
    verdict = np.zeros((len(first), len(variants)), dtype=bool)
    for u, i in enumerate(first):
        base = recipe_of_row(int(i))
        for j, v in enumerate(variants):
            x = RuleInput(space.model, space.job, unvalidated_recipe({**base.__dict__, **variant_fields(v)}),
                          space.world_size, profile)
            verdict[u, j] = not any((res := fn(x)) is not None and res.severity == "error" for fn in fns)
    return verdict[inv.reshape(-1)]


def _groups(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(first row of each distinct key row, group of every row) of a small-int key matrix, by a mixed-radix
    1-D code (np.unique over rows sorts a structured view, ~15x slower at a million rows)."""
    code = np.zeros(len(keys), dtype=np.int64)
    span = 1.0
    for j in range(keys.shape[1]):
        col = keys[:, j].astype(np.int64) - int(keys[:, j].min())
        base = int(col.max()) + 1
        span *= base
        code = code * base + col
    if span >= 2.0 ** 62:  # a code could overflow: fall back to the row sort
        _, first, inv = np.unique(keys, axis=0, return_index=True, return_inverse=True)
        return first, inv.reshape(-1)
    _, first, inv = np.unique(code, return_index=True, return_inverse=True)
    return first, inv.reshape(-1)


def choose(times_by_variant: np.ndarray, legal: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(best time, variant index) per candidate over its legal variants; index -1 where none is legal."""
    t = np.where(legal, times_by_variant, np.iinfo(np.int64).max)
    best = np.argmin(t, axis=1)
    rows = np.arange(len(t))
    ok = legal[rows, best]
    return np.where(ok, t[rows, best], np.iinfo(np.int64).max), np.where(ok, best, -1)
