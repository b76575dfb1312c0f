"""A pydantic ValidationError of an argument model as one line: `<argument>: <what is wrong> (got <value>); <what to
give>`, the value shown bounded (boundary/show.py) and the fix taken from the field's description
(shardplan/api_arguments/models.py). pydantic's own text names its internal union branches
(`function-after[_path_text(), union[str, ...]]`), which says nothing to a caller."""
from __future__ import annotations

from pydantic import BaseModel, ValidationError

from boundary.names import did_you_mean
from boundary.show import shown

# errors that say the value had the right type but the wrong size or value (said in pydantic's words); any other
# error is the wrong type, said as the type given and what to give
_VALUE_ERRORS = {"greater_than", "greater_than_equal", "less_than", "less_than_equal", "too_short", "too_long",
                 "finite_number", "literal_error", "value_error", "enum"}


def _shown(value: object) -> str:
    """The value, bounded; one too deep for repr, or whose repr fails, is named by its type."""
    try:
        return shown(value)
    except RecursionError:
        return f"<{type(value).__name__} nested too deep to show>"
    except Exception:  # noqa: BLE001 - a caller's object whose __repr__ raises: the message must not depend on it
        return f"<{type(value).__name__} that cannot be shown>"


def argument_line(exc: ValidationError, function: str, arguments: type[BaseModel]) -> str:
    """One line for the first argument `exc` finds wrong (the first in the signature's order)."""
    errors = exc.errors()
    name = str(errors[0]["loc"][0]) if errors[0]["loc"] else "arguments"
    mine = [e for e in errors if e["loc"] and str(e["loc"][0]) == name]
    if mine[0]["type"] == "extra_forbidden":
        hint = did_you_mean(name, list(arguments.model_fields)) or f"; see help(shardplan.{function})"
        return f"{name}: {function}() takes no argument {name!r}{hint}"
    field = arguments.model_fields.get(name)
    fix = field.description if field is not None and field.description else f"see help(shardplan.{function})"
    if mine[0]["type"] == "missing":
        return f"{name}: {function}() needs this argument; {fix}"
    # a union's branches each report; the branch that took the type and found the value wrong says the most
    value_errors = [e for e in mine if e["type"] in _VALUE_ERRORS]
    if value_errors:
        err = value_errors[0]
        msg = err["msg"].removeprefix("Value error, ")
        msg = msg[:1].lower() + msg[1:]
        if len(msg) > 200:
            msg = msg[:200] + "..."
        return f"{name}: {msg} (got {_shown(err['input'])}); {fix}"
    # the wrong type: where a container branch took the value, its item is what was wrong (nodes=[1, "2"] -> nodes[1])
    err = max(mine, key=lambda e: sum(isinstance(p, int) for p in e["loc"]))
    value = err["input"]
    where = "".join(f"[{p}]" for p in err["loc"][1:] if isinstance(p, int))
    kind = type(value).__name__
    what = "None" if value is None else f"{'an' if kind[:1].lower() in 'aeiou' else 'a'} {kind}"  # a str, an int
    return f"{name}{where}: {what} is not accepted (got {_shown(value)}); {fix}"
