"""The hint schema and its validation: everything a proposer says is untrusted input until it passes here.

A hint names one or more axes (solver.space.AXES) with values or an integer range, and an action:
- pin: a restricted sub-search over exactly these values (several axes = one cross-axis combination,
  e.g. {ep: 8, pp: 4, schedule: interleaved, recompute: selective:core_attn+moe_act});
- forbid: drop these values of one axis from the sub-searches of the round (never from the final solve);
- prefer: a soft preference, used as the CP-SAT solution hint.
Validation drops, with a one-line reason, anything that does not parse (unknown axes or keys, wrong
types), any value that is not legal in this space within the user's pins (TP=3 on 8 GPUs, negative,
10**12), ranges with no legal value, forbids that would empty an axis, and rationales that read like
instructions to the reader rather than reasons (prompt injection). Hints can only narrow the legal
space, so nothing here can make an illegal recipe legal; validation keeps reports and logs honest.
"""
from __future__ import annotations

import logging
import re
from typing import Any, Literal, Mapping, Optional, Sequence, Union

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt, StrictStr, ValidationError

from boundary.text import normalise_untrusted
from solver.space import AXES

log = logging.getLogger(__name__)

AxisName = Literal["tp", "pp", "vpp", "cp", "ep", "etp", "mbs", "sp", "recompute", "schedule", "dp_sharding", "acc_split",
                   "tp_comm_overlap", "uneven_stages", "moe_dispatcher", "ep_comm_overlap"]
Scalar = Union[StrictBool, StrictInt, StrictStr, None]  # None: ETP follows TP (dense models)
INT_AXES = ("tp", "pp", "vpp", "cp", "ep", "etp", "mbs")
PER_CANDIDATE_AXES = ("moe_dispatcher", "ep_comm_overlap")  # solver/variants.py picks them per candidate
MAX_HINTS_PER_REPLY = 16        # a reply with more is cut here; the rest are rejected as "too many"
MAX_VALUES_PER_AXIS = 64
MAX_RATIONALE_CHARS = 600
MAX_STRING_VALUE_CHARS = 64
assert set(AXES) == set(AxisName.__args__), "hint axes must follow solver.space.AXES"

# Phrases that address the reader instead of explaining a trade-off (OWASP LLM01 prompt-injection examples)
_INJECTION = re.compile(
    r"ignore\s+(all\s+|any\s+|the\s+)?(previous|prior|above|earlier|preceding)|disregard|forget\s+(all|everything|your)"
    r"|system\s*prompt|you\s+are\s+now|new\s+instructions?|override|jailbreak|\bact\s+as\b|pretend\s+to"
    r"|<\|[a-z_]+\|>|\b(system|assistant|user)\s*:|https?://|\bsudo\b|rm\s+-rf|\bexec\(|\beval\(",
    re.IGNORECASE)
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


class ValueRange(BaseModel):
    """An inclusive integer range; either end may be open."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    min: Optional[StrictInt] = None
    max: Optional[StrictInt] = None


class Hint(BaseModel):
    """One proposal. After `validate_hints`, `axes` maps each axis to the explicit list of legal values."""

    model_config = ConfigDict(extra="forbid")
    action: Literal["pin", "forbid", "prefer"]
    axes: dict[AxisName, Union[ValueRange, list[Scalar], Scalar]] = Field(min_length=1)
    rationale: str = Field("", description="why: a trade-off, in one or two sentences")
    source: str = Field("", description="who made it: 'rule:<name>' or 'llm:<model>' (set by the proposer, never by the reply)")

    def key(self) -> tuple:
        """Identity of a validated hint (dedupes repeats across rounds)."""
        return (self.action, tuple(sorted((a, tuple(map(repr, v))) for a, v in self.axes.items())))

    def describe(self) -> str:
        parts = []
        for axis, values in self.axes.items():
            shown = values if not isinstance(values, list) else (values[0] if len(values) == 1 else "|".join(map(str, values)))
            parts.append(f"{axis}={shown}")
        return f"{self.action} " + ", ".join(parts)


class Rejected(BaseModel):
    """A hint that was dropped, as it arrived, with the reason."""

    model_config = ConfigDict(extra="forbid")
    hint: Any
    reason: str
    source: str = ""
    round: Optional[int] = Field(None, description="loop round that received it")


def _one_line(exc: ValidationError) -> str:
    err = exc.errors()[0]
    loc = [str(p) for p in err["loc"]]
    if len(loc) >= 2 and loc[0] == "axes":
        if "[key]" in loc:
            return f"schema: axes.{loc[1]}: unknown axis; axes are {', '.join(AXES)}"
        return (f"schema: axes.{loc[1]}: unsupported value {_short(err.get('input'))}; give an integer, true/false, a name, "
                "a list of those, or {\"min\": N, \"max\": N}")
    return f"schema: {'.'.join(loc) or 'hint'}: {err['msg']}"


def _typed_member(value, allowed: Sequence) -> bool:
    return any(type(value) is type(v) and value == v for v in allowed)


def _resolve_axis(axis: str, spec, legal: Sequence, top_k_region: bool = False) -> tuple[Optional[list], Optional[str]]:
    """(explicit legal values, None) or (None, reason); `top_k_region`: `legal` holds only the values of recipes
    that can reach the top K (the solve pruned the rest by a proven bound), and the reasons say so."""
    what = "the value of a recipe that can reach the top K" if top_k_region else "a legal value here"
    kind = "value of a recipe that can reach the top K" if top_k_region else "legal value"
    if isinstance(spec, ValueRange):
        if axis not in INT_AXES:
            return None, f"{axis}: a range needs an integer axis ({', '.join(INT_AXES)})"
        if spec.min is not None and spec.max is not None and spec.min > spec.max:
            return None, f"{axis}: empty range {spec.min}..{spec.max}"
        vals = [v for v in legal if v is not None and (spec.min is None or v >= spec.min) and (spec.max is None or v <= spec.max)]
        if not vals:
            return None, f"{axis}: no {kind} in {spec.min}..{spec.max} (those within your pins: {_show(legal)})"
        return vals, None
    values = spec if isinstance(spec, list) else [spec]
    if not values:
        return None, f"{axis}: empty value list"
    if len(values) > MAX_VALUES_PER_AXIS:
        return None, f"{axis}: {len(values)} values (at most {MAX_VALUES_PER_AXIS})"
    out = []
    for v in values:
        if isinstance(v, str) and (len(v) > MAX_STRING_VALUE_CHARS or _CONTROL.search(v)):
            return None, f"{axis}: value is not a short plain name"
        if not _typed_member(v, legal):
            return None, f"{axis}={_short(v)} is not {what} (those within your pins: {_show(legal)})"
        if not _typed_member(v, out):
            out.append(v)
    return out, None


def _check_rationale(text: str) -> Optional[str]:
    if len(text) > MAX_RATIONALE_CHARS:
        return f"rationale longer than {MAX_RATIONALE_CHARS} characters"
    if _CONTROL.search(text):
        return "rationale holds control characters"
    m = _INJECTION.search(text)
    if m:
        return f"rationale reads like an instruction, not a reason ({m.group(0)!r}); possible prompt injection"
    return None


def validate_one(raw: Any, legal: Mapping[str, Sequence], source: str, top_k_region: bool = False) -> tuple[Optional[Hint], Optional[str]]:
    """A validated Hint with explicit legal values, or the reason it was dropped."""
    if isinstance(raw, Hint):
        raw = raw.model_dump()
    if not isinstance(raw, dict):
        return None, f"schema: a hint must be an object, got {type(raw).__name__}"
    data = {k: v for k, v in raw.items() if k != "source"}  # the proposer, not the reply, says who made it
    if isinstance(data.get("rationale"), str):  # filtered and printed in one canonical form (no hidden characters)
        data["rationale"] = normalise_untrusted(data["rationale"][:4 * MAX_RATIONALE_CHARS])
    try:
        hint = Hint(**data, source=source)
    except ValidationError as exc:
        return None, _one_line(exc)
    except RecursionError:
        return None, "schema: nested too deeply"
    except TypeError as exc:  # non-string keys
        return None, f"schema: {str(exc).splitlines()[0]}"
    reason = _check_rationale(hint.rationale)
    if reason:
        return None, reason
    resolved: dict[str, list] = {}
    for axis, spec in hint.axes.items():
        if axis in PER_CANDIDATE_AXES:
            return None, (f"{axis}: chosen per candidate (the fastest legal value, solver/variants.py); a hint cannot "
                          f"narrow it, pin it with --{axis.replace('_', '-')} instead")
        vals, reason = _resolve_axis(axis, spec, list(legal.get(axis, [])), top_k_region)
        if reason:
            return None, reason
        resolved[axis] = vals
    if hint.action == "forbid":
        if len(resolved) != 1:
            return None, "forbid takes exactly one axis (forbid a combination by pinning its alternatives)"
        (axis, vals), = resolved.items()
        if len([v for v in legal.get(axis, []) if not _typed_member(v, vals)]) == 0:
            return None, f"forbid {axis}: would forbid every legal value"
    return hint.model_copy(update={"axes": resolved}), None


def validate_hints(raw_hints: Sequence, legal: Mapping[str, Sequence], source: str,
                   top_k_region: bool = False) -> tuple[list[Hint], list[Rejected]]:
    """Validate a proposer's reply; duplicates collapse, each dropped hint is logged with its reason."""
    kept: list[Hint] = []
    rejected: list[Rejected] = []
    seen: set = set()
    if not isinstance(raw_hints, (list, tuple)):
        rejected.append(Rejected(hint=_jsonable(raw_hints), reason="schema: expected a list of hints", source=source))
        raw_hints = []
    for i, raw in enumerate(raw_hints):
        if i >= MAX_HINTS_PER_REPLY:
            reason = f"too many hints (at most {MAX_HINTS_PER_REPLY} per reply)"
            hint = None
        else:
            hint, reason = validate_one(raw, legal, source, top_k_region)
        if hint is None:
            rejected.append(Rejected(hint=_jsonable(raw), reason=reason, source=source))
            log.info("proposer %s: dropped hint %s: %s", source, _short(raw), reason)
        elif hint.key() not in seen:
            seen.add(hint.key())
            kept.append(hint)
    return kept, rejected


def _jsonable(raw: Any, depth: int = 0) -> Any:
    """What the report keeps of a raw hint: JSON types only, long text cut, nesting cut at 6 levels."""
    if isinstance(raw, BaseModel):
        raw = raw.model_dump(mode="json")
    if isinstance(raw, (dict, list, tuple)) and depth >= 6:
        return "..."
    if isinstance(raw, dict):
        return {str(k)[:64]: _jsonable(v, depth + 1) for k, v in list(raw.items())[:32]}
    if isinstance(raw, (list, tuple)):
        return [_jsonable(v, depth + 1) for v in list(raw)[:MAX_VALUES_PER_AXIS]]
    if isinstance(raw, str):
        return raw[:MAX_RATIONALE_CHARS]
    if raw is None or isinstance(raw, (bool, int, float)):
        return raw
    return repr(raw)[:200]


def _short(v: Any) -> str:
    s = repr(v)
    return s if len(s) <= 80 else s[:77] + "..."


def _show(values: Sequence) -> str:
    return ", ".join(str(v) for v in values) or "none"
