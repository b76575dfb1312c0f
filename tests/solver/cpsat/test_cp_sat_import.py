"""solver/cpsat/backend.py: CP-SAT loads without pandas, and OR-Tools' pandas helpers still work through the proxy."""
from __future__ import annotations

import subprocess
import sys


def _run(code: str) -> str:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()


def test_solver_imports_cp_sat_without_pandas():
    out = _run("import sys; from solver.cpsat.backend import cp_model; import solver.cpsat.solve, solver.explain; "
               "m = cp_model.CpModel(); x = m.new_int_var(0, 5, 'x'); m.maximize(x); s = cp_model.CpSolver(); "
               "print(s.solve(m) == cp_model.OPTIMAL, s.value(x), 'pandas' in sys.modules)")
    assert out == "True 5 False"


def test_pandas_helpers_still_work_and_real_pandas_imports_later():
    out = _run("from solver.cpsat.backend import cp_model; import pandas as pd; m = cp_model.CpModel(); "
               "xs = m.new_int_var_series('x', pd.Index(range(3)), 0, 4); "
               "print(type(xs).__name__, len(xs), hasattr(pd, 'DataFrame'))")
    assert out == "Series 3 True"
