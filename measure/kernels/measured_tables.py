"""The bundled measured cost table of a hardware profile: `hardware/measured/<profile name>.json`.

Why bundled and found by name: `bench/gpu_check.sh` (through `shardplan measure`) writes its table there, and
tables reconstructed from published microbenchmarks ship there too; every projection of that profile should
then use the measured kernel times without the user passing the file. A table passed explicitly (the
`cost_table` argument of `measure.projection.project.project` / `measure.projection.vectorized.Evaluator`) still wins.

The file is the ordinary cost-table JSON (measure/kernels/cost_table.py). Its entries are looked up under one
fingerprint: a device measured by `shardplan measure` when the file has one, else the published
reconstruction (fingerprints starting `published:`, bench/published/tables.py), never a CPU's; a table that does not load is ignored with the
reason kept in `load_errors` rather than failing every projection of the part.
"""
from __future__ import annotations

from pathlib import Path
from typing import Optional

from measure.kernels.cost_table import CostTable, CostTableError

MEASURED_DIR = Path(__file__).resolve().parents[2] / "hardware" / "measured"
CPU_PREFIX = "cpu:"  # measure/kernels/fingerprint.py: a CPU device's fingerprint

_CACHE: dict = {}
load_errors: dict[str, str] = {}


def table_path(profile_name: str, directory: Optional[Path] = None) -> Path:
    return (directory or MEASURED_DIR) / f"{profile_name}.json"


def bundled_table(profile_name: str, directory: Optional[Path] = None) -> tuple[Optional[CostTable], Optional[str]]:
    """(table, fingerprint) of the profile's bundled measured table, or (None, None) when there is none.
    Re-read when the file changes (mtime, size), so a running `measure` is picked up by the next projection."""
    path = table_path(profile_name, directory)
    try:
        st = path.stat()
    except OSError:
        return None, None
    key = (str(path), st.st_mtime_ns, st.st_size)
    hit = _CACHE.get(key)
    if hit is None:
        try:
            table = CostTable.load(path)
        except CostTableError as exc:
            load_errors[profile_name] = str(exc)
            table = None
        # a GPU measurement first, then the published reconstruction; never a CPU's (`measure --device cpu` into this
        # file made an H100 projection 53x slower, silently): every bundled profile is an accelerator
        fps = sorted((f for f in table.fingerprints() if not f.startswith(CPU_PREFIX)),
                     key=lambda f: f.startswith("published:")) if table is not None else []
        if table is not None and not fps and table.fingerprints():
            load_errors[profile_name] = f"{path}: only CPU measurements ({', '.join(table.fingerprints())}); not used"
        hit = _CACHE[key] = (table, fps[0]) if fps else (None, None)
    return hit


class _RooflineOnly:
    """A cost table with no entries: pass it as `cost_table` to price every op analytically even when the profile
    has a bundled measured table (bench/gpu_step.py compares the two)."""

    def lookup(self, fingerprint: str, op_key: str) -> Optional[float]:
        return None

    def fingerprints(self) -> list[str]:
        return []


ROOFLINE_ONLY = _RooflineOnly()
