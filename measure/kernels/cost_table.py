"""The measured cost table: median kernel seconds per (device fingerprint, op key), stored as JSON.

Why a file of its own and no torch: the projection reads this table (a measured entry wins over the
roofline) on machines without torch or a GPU; only `shardplan measure` writes it. Writes are atomic
(temp file in the same directory, fsync, os.replace) so a Ctrl-C or a crash mid-save leaves either
the old table or the new one, never half a file; the measure command saves after every few entries,
so an interrupted run loses at most those and resumes by skipping what is already there.

Keys: the fingerprint is `measure.kernels.fingerprint.device_fingerprint()`; the op key is
`measure.kernels.layer_ops.PhaseOp.key`, i.e. the phase and the shared `Op.key` (`measure/kernels/ops.py`), e.g.
`bwd_wgrad/gemm:8192x1024x4096:bf16`, so forward, dgrad and wgrad of the same kernel are apart.
"""
from __future__ import annotations

import contextlib
import fcntl
import json
import math
import os
from pathlib import Path
from typing import Optional

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from boundary.errors import InputRefused, ShardplanError
from boundary.parse import load_json
from boundary.read import read_text
from boundary.show import validation_line
from constraints.case import atomic_write_text

SCHEMA_VERSION = 1


class CostTableError(ShardplanError):
    """A cost-table file that cannot be read or does not validate; one line for the user."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Environment(_Strict):
    """Where a fingerprint's entries were measured; recorded so a table can be judged later."""

    device_name: str = Field(description="e.g. 'NVIDIA H100 80GB HBM3' or the CPU model name")
    device_type: str = Field(description="cpu | cuda (ROCm reports as cuda through torch)")
    compute_capability: Optional[str] = Field(None, description="CUDA sm, e.g. '9.0'; gfx arch on ROCm; None on CPU")
    driver_version: Optional[str] = Field(None, description="NVIDIA/AMD driver version when it can be read")
    cuda_version: Optional[str] = Field(None, description="torch.version.cuda")
    hip_version: Optional[str] = Field(None, description="torch.version.hip (ROCm builds)")
    torch_version: str
    host: str = Field(description="hostname the table was measured on")
    num_threads: Optional[int] = Field(None, description="torch intra-op threads (CPU timings depend on it)")


class Entry(_Strict):
    """One measured kernel: median of `num_reps` timed repetitions after warm-up."""

    # bounds: no kernel call is faster than 1 ns (below one GPU clock of launch), none measured here takes an hour
    median_s: float = Field(ge=1e-9, le=3600.0, description="median wall time of one call, seconds")
    num_reps: int = Field(gt=0, le=1 << 30, description="timed repetitions (after warm-up)")
    spread_s: float = Field(ge=0, le=3600.0, description="interquartile range (p75 - p25) of the repetitions, seconds")
    dtype_used: str = Field(description="dtype actually run (e.g. fp32 when bf16 is unsupported on a CPU)")
    impl: str = Field("", description="torch kernel that ran, e.g. torch._grouped_mm or bmm, sdpa, _scaled_mm")
    source: str = Field("", description="where a reconstructed entry's number was published (empty when measured here)")


class DeviceTable(_Strict):
    """All entries of one device fingerprint, with its environment."""

    environment: Environment
    entries: dict[str, Entry] = Field(default_factory=dict, description="table key -> entry")


class CostTable(_Strict):
    """The whole table: several devices may share one file (e.g. a CPU table and an H100 table)."""

    schema_version: int = SCHEMA_VERSION
    devices: dict[str, DeviceTable] = Field(default_factory=dict, description="fingerprint -> device table")

    # --- reading -------------------------------------------------------------------------------
    @classmethod
    def load(cls, path: str | Path, missing_ok: bool = False) -> "CostTable":
        """Read a table; with `missing_ok` a missing file gives an empty table (a fresh `measure` run)."""
        path = Path(path)
        if not os.path.lexists(path):
            if missing_ok:
                return cls()
            raise CostTableError(f"cost table {path} does not exist; create it with `shardplan measure --out {path}`")
        label = f"cost table {path}"
        try:
            data = load_json(read_text(path, "cost table", label), "cost table", label)
        except InputRefused as exc:
            raise CostTableError(str(exc)) from None
        try:
            table = cls.model_validate(data)
        except ValidationError as exc:
            raise CostTableError(f"cost table {path}: field {validation_line(exc)}") from None
        if table.schema_version != SCHEMA_VERSION:
            raise CostTableError(f"cost table {path}: schema_version {table.schema_version}, this shardplan reads {SCHEMA_VERSION}")
        return table

    def lookup(self, fingerprint: str, op_key: str) -> Optional[float]:
        """Median seconds of `op_key` measured on `fingerprint`, or None when not measured there."""
        device = self.devices.get(fingerprint)
        if device is None:
            return None
        entry = device.entries.get(op_key)
        return None if entry is None else entry.median_s

    def per_element_s(self, fingerprint: str, phase: str, kind: str, dtype: str) -> Optional[float]:
        """Seconds per element of a bytes-bound kind (optimizer_step, elementwise, norms, activations),
        from the largest entry of that phase/kind/dtype measured on `fingerprint`; None if none.

        Why: bytes-bound kernels scale linearly with elements once past launch overhead, and the
        optimizer step's per-rank parameter count rarely matches a measured size exactly, so the
        projection can price `n` elements as n * per_element_s (largest entry: least launch share).
        """
        device = self.devices.get(fingerprint)
        if device is None:
            return None
        prefix = f"{phase}/{kind}:"
        best: Optional[tuple[int, float]] = None
        for key, entry in device.entries.items():
            if not key.startswith(prefix) or not key.endswith(f":{dtype}"):
                continue
            shape = key[len(prefix):].rsplit(":", 1)[0]
            elements = math.prod(int(d) for d in shape.split("x"))
            if best is None or elements > best[0]:
                best = (elements, entry.median_s)
        return None if best is None else best[1] / best[0]

    def has(self, fingerprint: str, op_key: str) -> bool:
        device = self.devices.get(fingerprint)
        return device is not None and op_key in device.entries

    def fingerprints(self) -> list[str]:
        return sorted(self.devices)

    def num_entries(self, fingerprint: Optional[str] = None) -> int:
        if fingerprint is not None:
            device = self.devices.get(fingerprint)
            return 0 if device is None else len(device.entries)
        return sum(len(d.entries) for d in self.devices.values())

    # --- writing -------------------------------------------------------------------------------
    def add(self, fingerprint: str, op_key: str, entry: Entry, environment: Optional[Environment] = None) -> None:
        """Record one entry; the first entry of a new fingerprint must bring its environment."""
        device = self.devices.get(fingerprint)
        if device is None:
            if environment is None:
                raise ValueError(f"fingerprint {fingerprint!r} is new to this table; pass its environment")
            device = self.devices[fingerprint] = DeviceTable(environment=environment)
        device.entries[op_key] = entry

    def merge_from(self, other: "CostTable") -> int:
        """Add `other`'s entries this table lacks (this table's own entries win); returns how many were added."""
        added = 0
        for fingerprint, device in other.devices.items():
            for key, entry in device.entries.items():
                if not self.has(fingerprint, key):
                    self.add(fingerprint, key, entry, device.environment)
                    added += 1
        return added

    def save(self, path: str | Path) -> None:
        """Merge with what is on disk now, then write atomically (temp file, fsync, os.replace), all under an
        exclusive lock on the table's folder, so two `measure` runs on one table keep both runs' entries
        instead of the last writer's (issue 17: 49 of 89 entries kept). This table takes the other run's
        entries too, so neither measures them again."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        with folder_lock(path.parent):
            if os.path.lexists(path):
                self.merge_from(CostTable.load(path))
            atomic_write_text(path, json.dumps(self.model_dump(mode="json"), indent=1, sort_keys=True) + "\n",
                              label=f"cost table {path}", updates_input=True)


@contextlib.contextmanager
def folder_lock(directory: Path):
    """An exclusive fcntl.flock on the folder itself (no lock file left behind); released on close, also when
    the process dies. Held only for one read-merge-write, which takes milliseconds."""
    fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing drops the lock

