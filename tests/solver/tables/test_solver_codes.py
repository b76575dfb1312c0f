"""solver.tables.codes equals numpy's unique on the value ranges the tables produce (small codes, negatives, large keys)."""
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from solver.tables.codes import column_ranks, unique_ints


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(min_value=-5, max_value=1 << 40), min_size=1, max_size=300), st.booleans())
def test_unique_ints_equals_numpy(values, small):
    col = np.array([v % 50 for v in values] if small else values, dtype=np.int64)
    uniq, inv = unique_ints(col)
    ref_u, ref_inv = np.unique(col, return_inverse=True)
    assert uniq.tolist() == ref_u.tolist() and inv.tolist() == ref_inv.reshape(-1).tolist()
    ranks, n = column_ranks(col)
    assert n == len(ref_u) and ranks.tolist() == ref_inv.reshape(-1).tolist()
