"""The ledger of evaluated recipes and the context a proposer reads (model, cluster, job, legal values).

Why a ledger: a proposer that sees what was already tried (step time, bubble, where the time goes,
memory headroom) can propose the next combination instead of repeating the first one; the loop adds
every sub-search's answers here and the final solve is hinted with the best entry.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

from pydantic import BaseModel, ConfigDict, Field

GIB = 1024 ** 3


class LedgerEntry(BaseModel):
    """One evaluated, legal recipe: its axis values, projection summary and memory of the most loaded rank."""

    model_config = ConfigDict(extra="forbid")
    axes: dict[str, Any] = Field(description="axis -> value, spelled as in solver.space (recompute 'selective:core_attn')")
    dp: int
    time_us: int = Field(description="projected iteration time, integer microseconds")
    tokens_per_s_per_gpu: float
    mfu: float
    bubble_fraction: float
    time_shares: dict[str, float] = Field(description="breakdown term / iteration time (compute, ep_comm, pp_bubble, ...)")
    peak_bytes: int
    usable_bytes: int
    act: int = Field(description="activation row index in the tables (the CP-SAT hint)")
    shard: int
    origin: str = Field(description="which sub-search found it")

    @property
    def headroom_bytes(self) -> int:
        return self.usable_bytes - self.peak_bytes

    @property
    def headroom_fraction(self) -> float:
        return self.headroom_bytes / self.usable_bytes if self.usable_bytes else 0.0


def entry_from_ranked(columns, ranked, origin: str) -> LedgerEntry:
    """A ledger entry from a solver answer (solver.cpsat.solve.Ranked); `columns` is the tables' AxisColumns."""
    proj, mem = ranked.projection, ranked.check.memory
    total = proj.iteration_time_s or 1.0
    shares = {k: v / total for k, v in proj.breakdown.model_dump().items()}
    axes = columns.values_of(ranked.act, ranked.shard)
    return LedgerEntry(axes=axes, dp=ranked.check.dp, time_us=ranked.time_us, tokens_per_s_per_gpu=proj.tokens_per_s_per_gpu,
                       mfu=proj.mfu, bubble_fraction=proj.bubble_fraction, time_shares=shares, peak_bytes=mem.peak_bytes,
                       usable_bytes=mem.usable_bytes, act=ranked.act, shard=ranked.shard, origin=origin)


class Ledger:
    """Entries keyed by (act, shard); best first by (time, act, shard) — the solver's own tie-break."""

    def __init__(self) -> None:
        self.entries: dict[tuple[int, int], LedgerEntry] = {}

    def add(self, entry: LedgerEntry) -> None:
        self.entries.setdefault((entry.act, entry.shard), entry)

    def top(self, n: int) -> list[LedgerEntry]:
        return sorted(self.entries.values(), key=lambda e: (e.time_us, e.act, e.shard))[:n]

    def best(self) -> Optional[LedgerEntry]:
        top = self.top(1)
        return top[0] if top else None

    def __len__(self) -> int:
        return len(self.entries)


class Suggestion(BaseModel):
    """Advice outside the searched axes (e.g. precision, a job field): reported, never applied."""

    model_config = ConfigDict(extra="forbid")
    rule: str
    text: str


@dataclass
class ProposerContext:
    """What a proposer may read. `legal` is axis -> legal values within the user's pins; when `top_k_region` is set,
    only those of recipes that can reach the top K (solver/prune.py left the others out, each provably slower)."""

    model: Any
    job: Any
    placement: Any
    profile: Any
    legal: dict[str, list]
    top_k_region: bool = False
    ledger: Ledger = field(default_factory=Ledger)
    round_index: int = 0
    rejected_reasons: list[str] = field(default_factory=list)

    @property
    def world_size(self) -> int:
        return self.placement.world_size

    @property
    def scale_up_gpus(self) -> int:
        """GPUs that share the NVLink/xGMI domain, capped by the job's world size."""
        return min(self.profile.scale_up_domain_size, self.world_size)
