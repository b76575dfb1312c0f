"""What one input may cost with everything it pulls in: the files its `extends` / `config` / `model` entries open,
their bytes and YAML values, and the characters its `${NAME}` references add.

Why a budget beside the per-file limits (boundary.limits): each file of a Primus tree passes the 1 MiB and
10,000-value limits on its own, but a tree that fans out (3 bases a file, 14 deep) opens millions of them and hung
`check` (issue 33); a `${NAME}` in each of 10,000 values adds a 128 KiB environment value 10,000 times. One budget per
input, charged before each file is opened and before each substitution is built, refuses in one line naming the file,
the limit and the fix.
"""
from __future__ import annotations

from boundary.errors import InputRefused
from boundary.limits import (
    MAX_EXPANDED_CHARS,
    MAX_TREE_BYTES,
    MAX_TREE_FILES,
    MAX_TREE_YAML_VALUES,
    human_bytes,
)


class InputBudget:
    """Running totals for one input (`label` names it in messages); each `charge_*` refuses past its limit."""

    def __init__(self, label: str, max_files: int = MAX_TREE_FILES, max_bytes: int = MAX_TREE_BYTES,
                 max_values: int = MAX_TREE_YAML_VALUES, max_expanded_chars: int = MAX_EXPANDED_CHARS):
        self.label = label
        self.max_files, self.max_bytes, self.max_values = max_files, max_bytes, max_values
        self.max_expanded_chars = max_expanded_chars
        self.files = self.bytes = self.values = self.expanded_chars = 0

    def charge_file(self, where: str) -> None:
        """One more file named (by `where`, e.g. `base.yaml: extends`), counted before it is opened."""
        self.files += 1
        if self.files > self.max_files:
            raise InputRefused(f"{where}: {self.label} names more than {self.max_files} files through extends / config / "
                               "model (a file named twice counts twice); a real tree names under 10: merge the bases")

    def charge_bytes(self, size: int, where: str) -> None:
        """The bytes of a file just read (each file is already at most its own limit)."""
        self.bytes += size
        if self.bytes > self.max_bytes:
            raise InputRefused(f"{where}: the files {self.label} reads hold over {human_bytes(self.max_bytes)} together; "
                               "a real tree holds tens of KiB: give the configuration itself, not generated data")

    def values_left(self) -> int:
        """YAML values the rest of this input may hold (the bounded YAML loader stops there)."""
        return self.max_values - self.values

    def charge_values(self, count: int, where: str) -> None:
        self.values += count
        if self.values > self.max_values:
            raise InputRefused(f"{where}: the files {self.label} reads hold over {self.max_values:,} YAML values "
                               "together; a real tree holds about 1,000: give the configuration itself, not generated data")

    def charge_expansion(self, chars: int, where: str) -> None:
        """`chars` characters a `${NAME}` substitution is about to build (counted before it is built)."""
        self.expanded_chars += chars
        if self.expanded_chars > self.max_expanded_chars:
            raise InputRefused(f"{where}: ${{NAME}} references in {self.label} expand to over "
                               f"{human_bytes(self.max_expanded_chars)} in all; shorten the environment values or "
                               "write the values out")
