"""Integer coding helpers shared by the tables: distinct values of int columns and key rows in O(n) where the
values are small non-negative integers (a presence table), with np.unique's order and result, falling back to a sort.
Why: the tables code ~10^6 rows per build, and np.unique's sort was a visible share of a solve."""
from __future__ import annotations

import numpy as np


def column_ranks(col: np.ndarray) -> tuple[np.ndarray, int]:
    """(rank of each entry among the column's distinct values, number of distinct values); a presence table
    for small non-negative integers (O(n)), a sort otherwise."""
    col = np.asarray(col).reshape(-1).astype(np.int64, copy=False)
    if not len(col):
        return np.zeros(0, dtype=np.int64), 0
    if col.min() >= 0 and col.max() < max(1 << 16, 4 * len(col)):
        present = np.zeros(int(col.max()) + 1, dtype=np.int64)
        present[col] = 1
        rank_of = np.cumsum(present) - 1
        return rank_of[col], int(present.sum())
    _, inv = np.unique(col, return_inverse=True)
    inv = inv.reshape(-1)
    return inv, int(inv.max()) + 1


def unique_codes(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(distinct key rows, index of each row's key among them) of an int key matrix; the distinct rows come
    in lexicographic order of their per-column ranks (np.unique's order)."""
    if not len(keys):
        return keys[:0], np.zeros(0, dtype=np.int64)
    ranks, radix = zip(*(column_ranks(keys[:, j]) for j in range(keys.shape[1])))
    if np.prod(np.array(radix, dtype=float)) < 2.0 ** 62:
        code = np.zeros(len(keys), dtype=np.int64)
        for rank, base in zip(ranks, radix):  # mixed-radix code of the per-column ranks: 1-D is faster
            code = code * base + rank
        inv, some_row = code_groups(code)  # any row of each code will do: its key rows are equal
        return keys[some_row], inv
    uniq, inv = np.unique(keys, axis=0, return_inverse=True)
    return uniq, inv.reshape(-1)


def code_groups(code: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(index of each entry's value among the distinct values, ascending; one entry index holding each distinct
    value): what a table keyed by distinct codes needs to evaluate each key once and gather it back per entry."""
    inv, n_codes = column_ranks(code)
    some_row = np.zeros(n_codes, dtype=np.int64)
    some_row[inv] = np.arange(len(inv))
    return inv, some_row


def unique_ints(col: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """np.unique(col, return_inverse=True) of a 1-D int column (distinct values ascending, index of each entry)."""
    col = np.asarray(col, dtype=np.int64).reshape(-1)
    if not len(col):
        return col[:0], np.zeros(0, dtype=np.int64)
    inv, n = column_ranks(col)
    uniq = np.empty(n, dtype=np.int64)
    uniq[inv] = col
    return uniq, inv
