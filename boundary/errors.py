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


class ArgumentError(ShardplanError):
    """An argument of a public API function (shardplan/api.py, shardplan/sweep.py, shardplan/calibrate.py) has the
    wrong type, is out of range, is no known choice or is missing: one line naming the argument and what to give.
    Raised by shardplan/api_arguments/ before any work, so a notebook's mistake never reaches the library's insides
    (where `nodes="8"` once became a TypeError deep in the solver). `argument` names the argument (None when the call
    itself is malformed), so the CLI can say its option instead (shardplan/cli/errors.py)."""

    def __init__(self, message: str, argument: str | None = None):
        super().__init__(message)
        self.argument = argument


class InputFileError(ShardplanError):
    """A file the call was given cannot be read (missing, a folder, no permission): one line naming the file and why."""


class NotLegal(ShardplanError):
    """What was asked for is not legal or cannot fit, where the function's only answer is a refusal (render without
    force); the message lists why."""


class LimitExceeded(ShardplanError):
    """An internal limit was reached (Python's recursion depth, the process's memory): the input is too large or
    too deep to answer; one line naming the call and what to shrink."""


class InternalError(ShardplanError):
    """A bug in shardplan, not unusable input: any other exception that reached the API's edge, kept as __cause__ so
    the CLI reports its type and place (exit 3). A ShardplanError so that `except ShardplanError` around an API call
    catches everything the API raises, KeyboardInterrupt aside."""
