"""The error types for unusable input: ShardplanError, the base every layer raises, and the boundary's InputRefused.

Why here: boundary/ is the bottom of the dependency order (boundary -> hardware -> constraints -> measure -> solver ->
templates -> shardplan), so every layer imports ShardplanError without a cycle.

Raise `ShardplanError` (or a subclass) with one line, `<field>: <what is wrong> (<value>); <the fix>`, for input a
user can correct; the CLI prints it as `error: ...` with exit status 2 and the API lets it propagate. Any other
exception is a bug in shardplan: the CLI reports it as an internal error with exit status 3. It subclasses
ValueError so older `except ValueError` call sites keep catching it.
"""
from __future__ import annotations


class ShardplanError(ValueError):
    """Unusable input: a one-line message naming the field, what is wrong and the fix."""


class InputRefused(ShardplanError):
    """A file or value the boundary will not read: one line naming the file or field, what is wrong, the
    limit, and the fix. A ShardplanError, so the CLI prints it as `error: ...` with exit status 2."""
