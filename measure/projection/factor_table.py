"""Lazily filled lookup tables keyed by small-integer recipe axes (the vectorised projection's caches).

Why: each factor of the projection (a layer's cost, a pipeline split, a collective's span) depends on
few axes; computing it once per distinct key with the scalar code and gathering rows with numpy keeps
the batch path exactly equal to measure.projection.project while costing one array lookup per recipe.
"""
from __future__ import annotations

import numpy as np


class Axis:
    """Append-only value domain of one key axis with a value -> index lookup array (values are small ints)."""

    def __init__(self) -> None:
        self.values: list[int] = []
        self.lut = np.full(1, -1, dtype=np.int64)

    def index(self, arr: np.ndarray) -> np.ndarray:
        if arr.size and (arr.min() < 0 or arr.max() >= len(self.lut) or self.lut[arr].min() < 0):
            new = sorted(set(np.unique(arr).tolist()) - set(self.values))
            if new and new[0] < 0:
                raise ValueError(f"RecipeBatch: negative axis value {new[0]}; axes hold sizes >= 0")
            self.values += new
            self.lut = np.full(max(self.values) + 1, -1, dtype=np.int64)
            self.lut[self.values] = np.arange(len(self.values))
        return self.lut[arr]


class Factor:
    """A table of rows computed by scalar code once per key (a tuple of axis indices), looked up densely."""

    def __init__(self, compute) -> None:
        self.compute = compute
        self.keys: dict[tuple, int] = {}
        self.rows: list[np.ndarray] = []
        self.table = np.zeros((0, 0))
        self.sizes: tuple = ()
        self.dense = np.zeros(0, dtype=np.int64)

    def gather(self, idx: list[np.ndarray], sizes: tuple) -> np.ndarray:
        """The table rows of these keys (one row per batch element)."""
        rows = self.lookup(idx, sizes)
        return self.table.take(rows, axis=0)

    def lookup(self, idx: list[np.ndarray], sizes: tuple) -> np.ndarray:
        if sizes != self.sizes:
            self.sizes, self.dense = sizes, np.full(int(np.prod(sizes)), -1, dtype=np.int64)
            for key, row in self.keys.items():
                self.dense[np.ravel_multi_index(key, sizes)] = row
        code = np.ravel_multi_index(idx, sizes)
        rows = self.dense[code]
        if rows.size and rows.min() < 0:
            first_new = len(self.rows)
            for c in np.unique(code[rows < 0]).tolist():
                key = tuple(int(i) for i in np.unravel_index(c, sizes))
                self.keys[key] = self.dense[c] = len(self.rows)
                self.rows.append(np.asarray(self.compute(key), dtype=np.float64))
            self._append(self.rows[first_new:])
            rows = self.dense[code]
        return rows

    def _append(self, new_rows: list[np.ndarray]) -> None:
        """Grow the dense table by new rows; stage rows vary in length, zero columns are padding."""
        width = max([self.table.shape[1]] + [len(r) for r in new_rows])
        block = np.zeros((len(new_rows), width))
        for i, r in enumerate(new_rows):
            block[i, :len(r)] = r
        old = self.table
        if old.shape[1] < width:
            old = np.pad(old, ((0, 0), (0, width - old.shape[1])))
        self.table = np.concatenate([old, block]) if len(old) else block
