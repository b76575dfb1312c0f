"""`api_edge(Arguments)`: the one place a public API function's arguments are checked and its exceptions sorted.

Why a decorator: the function bodies (shardplan/api.py, shardplan/sweep.py, shardplan/calibrate.py) keep their logic
as it was, and the edge is one line above each. Before it, `solve(nodes="8")` raised TypeError, `hardware=["h100"]`
AttributeError, a deep mapping RecursionError, `sweep(nodes=None)` TypeError; a caller catching ShardplanError
caught none of them.

At the edge:
- the call is bound to the signature (a missing or unknown argument is an ArgumentError, not Python's TypeError) and
  validated by the function's model (shardplan/api_arguments/models.py); the function then gets the values as
  given, so what it does with them is unchanged;
- a ShardplanError from inside passes as it is (its subclass says the kind: RenderRefused, ModelError, ...);
- what is not an Exception passes: KeyboardInterrupt and SystemExit (Ctrl-C must stop a notebook cell, and the CLI
  exits 130), asyncio's CancelledError, a caller's own timeout raised as a BaseException (a test harness's alarm),
  so a caller's control flow is never turned into an error;
- RecursionError and MemoryError are LimitExceeded; OSError (a file that vanished or cannot be read) is
  InputFileError; anything else is InternalError, a bug, with the original kept as __cause__ (the CLI reports it as
  an internal error with its type and place, exit 3).
"""
from __future__ import annotations

import functools
import inspect
import re

from pydantic import BaseModel, ValidationError

from boundary.errors import ArgumentError, InputFileError, InternalError, LimitExceeded, ShardplanError
from boundary.show import shown
from shardplan.api_arguments.messages import argument_line


def _bound(signature: inspect.Signature, function: str, args: tuple, kwargs: dict) -> dict:
    """{name: value} of the call as given, **kwargs spread (render's paths are arguments of their own)."""
    try:
        bound = signature.bind(*args, **kwargs)
    except TypeError as exc:  # missing, unexpected or doubled arguments: Python's words, naming them
        named = re.search(r"'(\w+)'", str(exc))
        raise ArgumentError(f"{function}(): {exc}; see help(shardplan.{function})", named and named.group(1)) from None
    given = {}
    for name, value in bound.arguments.items():
        kind = signature.parameters[name].kind
        if kind == inspect.Parameter.VAR_KEYWORD:
            given.update(value)
        elif kind == inspect.Parameter.VAR_POSITIONAL:
            raise ArgumentError(f"{function}(): takes no extra positional arguments; see help(shardplan.{function})")
        else:
            given[name] = value
    return given


def check_arguments(arguments: type[BaseModel], function: str, given: dict) -> None:
    """Raise ArgumentError (one line naming the argument) unless `given` passes `arguments`."""
    try:
        arguments.model_validate(given)
    except ValidationError as exc:
        argument = str(exc.errors()[0]["loc"][0]) if exc.errors()[0]["loc"] else None
        raise ArgumentError(argument_line(exc, function, arguments), argument) from None
    except RecursionError:  # a structure nested deeper than Python's recursion limit
        raise ArgumentError(f"{function}(): an argument nests deeper than Python can read; give plain values") from None


def sorted_exception(exc: BaseException, function: str) -> ShardplanError:
    """The ShardplanError that `exc`, raised inside `function`, leaves the API as."""
    if isinstance(exc, RecursionError):
        return LimitExceeded(f"{function}(): the input nests deeper than Python's recursion limit; flatten or shorten it")
    if isinstance(exc, MemoryError):
        return LimitExceeded(f"{function}(): ran out of memory; give a smaller model, cluster or search (pin axes)")
    if isinstance(exc, OSError):
        name = shown(str(exc.filename)) if exc.filename is not None else "a file"
        return InputFileError(f"{name}: cannot be read or written ({exc.strerror or type(exc).__name__}); give a path "
                              "that exists and is readable, or a writable folder for outputs")
    try:
        first = str(exc).splitlines()[0][:200] if str(exc) else ""
    except Exception:  # noqa: BLE001 - an exception whose __str__ fails still leaves as one line
        first = "(its message cannot be shown)"
    return InternalError(f"internal error in {function}(): {type(exc).__name__}: {first} (a bug in shardplan, not your "
                         "input; please report it)")


def api_edge(arguments: type[BaseModel]):
    """Decorate a public API function: validate its arguments with `arguments`, and let no Exception but a
    ShardplanError out (BaseExceptions such as KeyboardInterrupt pass as they are)."""
    def decorate(fn):
        signature = inspect.signature(fn)
        name = fn.__name__

        @functools.wraps(fn)
        def edge(*args, **kwargs):
            check_arguments(arguments, name, _bound(signature, name, args, kwargs))
            try:
                return fn(*args, **kwargs)
            except ShardplanError:
                raise
            except Exception as exc:  # noqa: BLE001 - the API's edge: no other Exception leaves
                raise sorted_exception(exc, name) from exc

        edge.arguments = arguments
        return edge

    return decorate
