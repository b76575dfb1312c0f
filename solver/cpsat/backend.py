"""OR-Tools' CP-SAT module, imported without pandas.

Why: `ortools.sat.python.cp_model` imports pandas at module level for its pandas-series helpers
(`new_int_var_series` and the like), which shardplan never calls; importing pandas costs ~0.3 s of the 2 s a
64-GPU `solve` is allowed on a 2-core machine. While CP-SAT loads, `pandas` resolves to a placeholder holding
the two names its annotations read; then the module's `pd` becomes a proxy that imports the real pandas on first
use, so every OR-Tools function behaves as documented. Where pandas is already loaded, or anything fails, this is
the plain import.
"""
from __future__ import annotations

import importlib
import sys
import types


class _LazyPandas(types.ModuleType):
    """Stands in for `pandas` inside cp_model: the first attribute read imports the real module."""

    def __getattr__(self, name: str):
        return getattr(importlib.import_module("pandas"), name)


def _import_cp_model():
    name = "ortools.sat.python.cp_model"
    if name in sys.modules or "pandas" in sys.modules:
        return importlib.import_module(name)
    placeholder = types.ModuleType("pandas")
    placeholder.Index = type("Index", (), {})  # only read by annotations while the module loads
    placeholder.Series = type("Series", (), {})
    sys.modules["pandas"] = placeholder
    try:
        module = importlib.import_module(name)
    except Exception:  # an OR-Tools release that reads more of pandas at import: import it for real
        sys.modules.pop(name, None)
        sys.modules.pop("pandas", None)
        return importlib.import_module(name)
    finally:
        if sys.modules.get("pandas") is placeholder:
            del sys.modules["pandas"]
    module.pd = _LazyPandas("pandas")
    return module


cp_model = _import_cp_model()
