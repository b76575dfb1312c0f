"""Bounded display of user values in error messages."""
from __future__ import annotations

from boundary.limits import MAX_SHOWN_CHARS


def shown(value: object, limit: int = MAX_SHOWN_CHARS) -> str:
    """`repr(value)` cut to `limit` characters with the full size stated, never the whole of a huge value.

    Large containers and strings are summarised before repr, so an alias-expanded list of millions of
    items is never turned into text at all (issue 17: one message was a 351 MB line)."""
    if isinstance(value, (list, tuple, dict, set, frozenset)) and len(value) > limit:
        return f"<{type(value).__name__} of {len(value):,} items>"
    if isinstance(value, str) and len(value) > limit:
        return f"{value[:limit]!r}... ({len(value):,} characters)"
    text = repr(value)
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... ({len(text):,} characters)"


_BOUND_ERRORS = {"greater_than", "greater_than_equal", "less_than", "less_than_equal", "too_short", "too_long",
                 "finite_number"}


def validation_line(exc, rename: dict[str, str] | None = None, reasons: dict[str, str] | None = None,
                    shapes: dict[str, str] | None = None) -> str:
    """The first error of a pydantic ValidationError as `field: message (got value)`, the value shown
    bounded (`shown`); `rename` maps spec field names to the names the user wrote; `reasons` maps a field
    name to why its bounds are what they are, added after a bound error; `shapes` maps a field that takes a
    mapping to an example of one, added when a plain value was given instead."""
    err = exc.errors()[0]
    loc = ".".join(str((rename or {}).get(str(p), p)) for p in err["loc"]) or "value"
    msg = err["msg"].removeprefix("Value error, ")  # a validator's own words say enough: pydantic's prefix says nothing
    if not err["loc"] and err.get("type") == "value_error":
        return msg  # a whole-model validator's message already names its fields
    if len(msg) > 300:  # a validator's message may quote the input itself
        msg = msg[:300] + "..."
    value = err.get("input")
    got = "" if isinstance(value, dict) or value is None else f" (got {shown(value)})"
    field = next((str(p) for p in reversed(err["loc"]) if isinstance(p, str)), "")
    kind = err.get("type")
    # a lower bound's reason is worth saying for a tiny positive value (1e-300), not for 0 or a negative
    lower_only = kind in ("greater_than", "greater_than_equal") and not (isinstance(value, (int, float)) and value > 0)
    why = (reasons or {}).get(field) if kind in _BOUND_ERRORS and not lower_only else None
    if kind in ("model_type", "dict_type") and (shapes or {}).get(field):
        why = f"give a mapping, e.g. {shapes[field]}"
    return f"{loc}: {msg}{got}" + (f"; {why}" if why else "")


MAX_ERROR_LINE_CHARS = 1_000  # an error line a terminal shows whole: the field, what is wrong, the fix


def bounded_line(line: str, limit: int = MAX_ERROR_LINE_CHARS) -> str:
    """`line` cut to at most about `limit` characters by dropping its middle, so the field at the start and the fix
    at the end still show. Why: some messages quote a value whole, and a 12 KB `${A:${A:...}}` value once became a
    12 KB error line (issue 33's fuzz run); every `error:` line the CLI prints passes here."""
    if len(line) <= limit:
        return line
    head, tail = limit * 6 // 10, limit * 3 // 10
    return f"{line[:head]} [... {len(line) - head - tail:,} characters cut ...] {line[-tail:]}"
