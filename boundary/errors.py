"""The one error type of the input boundary."""
from __future__ import annotations


class InputRefused(ValueError):
    """A file or value the boundary will not read: one line naming the file or field, what is wrong, the
    limit, and the fix. A ValueError, so the CLI prints it as `error: ...` with exit status 2."""
