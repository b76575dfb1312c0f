"""Every parameter of every public API function refuses values of a wrong type, and values outside its range, with an
ArgumentError that names the parameter (issue 33: `solve(model=None)`, `nodes="8"`, `top="3"`, `hardware=["h100"]`,
`max_memory_fraction="0.9"`, `render(data_path=[...])`, `sweep(nodes=None)` raised TypeError, AttributeError, ...).

The parameters are read from the signatures, so a new parameter is covered the day it is added. Wrong values are the
ones its annotation does not admit; the argument model (shardplan/api_arguments/models.py) must refuse each before any
work is done. Numeric bounds are read from the model and probed just outside and just inside.
"""
from __future__ import annotations

import collections.abc
import inspect
import math
import types
import typing
from pathlib import Path

import pytest
from annotated_types import Ge, Gt, Le, Lt
from pydantic import ValidationError

import shardplan
from boundary.errors import ArgumentError

# the public functions: every function `import shardplan` exports, and the examples' way in
PUBLIC = [getattr(shardplan, name) for name in shardplan.__all__ if inspect.isfunction(getattr(shardplan, name))]
PUBLIC.append(shardplan.examples.path)

# the smallest call of each function; the wrong value replaces one argument, and the call must fail at the edge
# (no file here exists: a call that got past the edge would fail otherwise, never silently pass)
VALID = {
    "check": {"source": "no-such-recipe.yaml"},
    "solve": {"model": "Llama-3.1-8B", "hardware": "h100-sxm-80gb", "nodes": 1, "seq_length": 4096, "global_batch_size": 8},
    "render": {"source": "no-such-recipe.yaml"},
    "sweep": {"model": "Llama-3.1-8B", "hardware": "h100-sxm-80gb", "nodes": "1", "seq_length": 4096,
              "global_batch_size": 8},
    "calibrate": {"logs": ["no-such.log"], "hardware": "h100-sxm-80gb"},
    "path": {"name": "llama3-70b-h100"},
}

# values of every kind Python callers pass by mistake (a pathlib path is no candidate: a path is welcome wherever a
# name or file is, which the annotations say as str)
CANDIDATES = [None, True, 3, 2.5, "text", b"bytes", ["h100"], [1, "2"], ("a",), {"k": 1}, object(), range(1, 100_000), 1j]


def _edge_model(fn):
    assert hasattr(fn, "arguments"), f"{fn.__name__} is public but has no @api_edge (shardplan/api_arguments/edge.py)"
    return fn.arguments


def _parameters(fn) -> dict[str, object]:
    """{name: annotation} of the signature; a **kwargs stands for the argument model's fields that are not in the
    signature (render's paths: RenderPaths' fields), annotated as the model annotates them."""
    hints = typing.get_type_hints(inspect.unwrap(fn))
    params = {}
    for name, p in inspect.signature(fn).parameters.items():
        if p.kind == inspect.Parameter.VAR_KEYWORD:
            for field, info in _edge_model(fn).model_fields.items():
                if field not in inspect.signature(fn).parameters:
                    params[field] = info.annotation
        else:
            params[name] = hints[name]
    return params


def admits(annotation, value) -> bool:
    """Whether a value is of a type the annotation names (not whether it is in range)."""
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if annotation is typing.Any:
        return True
    if origin is typing.Annotated:  # a model's annotation: the type under its constraints
        return admits(annotation.__origin__, value)
    if origin is typing.Literal:
        return value in args
    if origin in (typing.Union, types.UnionType):
        return any(admits(a, value) for a in args)
    if annotation is type(None):
        return value is None
    if annotation is bool:
        return isinstance(value, bool)
    if annotation is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if annotation is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if origin is list:
        return isinstance(value, list) and all(admits(args[0], v) for v in value)
    if origin is collections.abc.Sequence:  # a str is a sequence of str, but no caller means a list of letters
        return isinstance(value, (list, tuple)) and all(admits(args[0], v) for v in value)
    if origin is collections.abc.Mapping:
        return isinstance(value, collections.abc.Mapping)
    if isinstance(annotation, type):
        return isinstance(value, annotation)
    raise AssertionError(f"this test does not know the annotation {annotation!r}; teach admits() about it")


def _cases():
    for fn in PUBLIC:
        for name, annotation in _parameters(fn).items():
            for value in CANDIDATES:
                if not admits(annotation, value):
                    yield pytest.param(fn, name, value, id=f"{fn.__name__}-{name}-{type(value).__name__}")


def test_every_public_function_with_parameters_has_a_valid_call_here():
    with_parameters = {fn.__name__ for fn in PUBLIC if inspect.signature(fn).parameters}
    assert with_parameters == set(VALID), "add the smallest valid call of each new public function to VALID"


@pytest.mark.parametrize("fn", PUBLIC, ids=lambda f: f.__name__)
def test_the_argument_model_has_every_parameter_of_the_signature(fn):
    params = {n for n, p in inspect.signature(fn).parameters.items() if p.kind != inspect.Parameter.VAR_KEYWORD}
    assert params <= set(_edge_model(fn).model_fields), f"{fn.__name__}: the model misses {params - set(_edge_model(fn).model_fields)}"
    assert _edge_model(fn).model_config.get("extra") == "forbid"


@pytest.mark.parametrize("fn, name, value", list(_cases()))
def test_a_wrong_type_is_an_argument_error_naming_the_parameter(fn, name, value):
    with pytest.raises(ArgumentError) as refused:
        fn(**{**VALID[fn.__name__], name: value})
    message = str(refused.value)
    assert message.startswith((f"{name}:", f"{name}[")) and "\n" not in message, message
    assert refused.value.argument == name


def _choices(fn):
    for name, field in _edge_model(fn).model_fields.items():
        if "Literal[" in str(field.annotation):
            yield pytest.param(fn, name, id=f"{fn.__name__}-{name}")


@pytest.mark.parametrize("fn, name", [c for fn in PUBLIC for c in _choices(fn)])
def test_an_unknown_choice_is_refused_naming_the_allowed_ones(fn, name):
    with pytest.raises(ArgumentError, match=rf"^{name}: input should be '") as refused:
        fn(**{**VALID[fn.__name__], name: "most"})
    assert "most" in str(refused.value)


def _bounds(fn):
    """(fn, name, just outside, just inside) for every numeric bound of the model's fields."""
    for name, field in _edge_model(fn).model_fields.items():
        for m in field.metadata:  # pydantic keeps a top-level Annotated's bounds here
            if isinstance(m, (Ge, Gt, Le, Lt)):
                yield from _probes(fn, name, m, is_int=field.annotation is int, in_list=False)
        for arg, in_list in _flatten(field.annotation):
            for m in getattr(arg, "__metadata__", ()):
                if isinstance(m, (Ge, Gt, Le, Lt)) and typing.get_origin(arg.__origin__) is None:
                    yield from _probes(fn, name, m, is_int=arg.__origin__ is int, in_list=in_list)


def _flatten(annotation, in_list=False):
    """(annotation, whether it types a list's items) of the annotation and everything inside it."""
    yield annotation, in_list
    inner = annotation.__origin__ if typing.get_origin(annotation) is typing.Annotated else annotation
    for a in typing.get_args(inner) if inner is not annotation else typing.get_args(annotation):
        yield from _flatten(a, in_list or typing.get_origin(inner) is list)


def _probes(fn, name, bound, is_int, in_list):
    for kind in ("ge", "gt", "le", "lt"):
        limit = getattr(bound, kind, None)
        if limit is None or (isinstance(limit, float) and math.isinf(limit)):
            continue
        step = 1 if is_int else (abs(limit) * 1e-6 or 1e-9)
        outside = {"ge": limit - step, "gt": limit, "le": limit + step, "lt": limit}[kind]
        inside = {"ge": limit, "gt": limit + step, "le": limit, "lt": limit - step}[kind]
        if in_list:
            outside, inside = [outside], [inside]
        yield pytest.param(fn, name, outside, inside, id=f"{fn.__name__}-{name}-{kind}-{limit}{'-item' if in_list else ''}")


@pytest.mark.parametrize("fn, name, outside, inside", list({b.id: b for fn in PUBLIC for b in _bounds(fn)}.values()))
def test_each_bound_refuses_just_outside_and_admits_just_inside(fn, name, outside, inside):
    model = _edge_model(fn)
    base = VALID[fn.__name__]
    with pytest.raises(ArgumentError, match=rf"^{name}: "):
        fn(**{**base, name: outside})
    model.model_validate({**base, name: inside})  # no work: only the edge's check


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
def test_a_fraction_or_a_time_is_finite(value):
    for name in ("max_memory_fraction", "time_limit_s", "max_time_s", "target_tokens_per_s"):
        with pytest.raises(ArgumentError, match=rf"^{name}: "):
            shardplan.solve(**VALID["solve"], **{name: value})


def test_the_bounds_are_exercised_on_each_counted_parameter():
    """The bound probes above reach the parameters issue 33 named (a model without bounds would probe nothing)."""
    probed = {(c.values[0].__name__, c.values[1]) for fn in PUBLIC for c in _bounds(fn)}
    for wanted in [("solve", "nodes"), ("solve", "top"), ("solve", "max_memory_fraction"), ("solve", "trials"),
                   ("solve", "seq_length"), ("solve", "global_batch_size"), ("solve", "max_time_s"), ("sweep", "train_tokens"),
                   ("check", "gpus_per_node"), ("solve", "time_limit_s")]:
        assert wanted in probed, wanted


def test_sizes_are_bounded_like_the_cli():
    """A 300-entry node list and an unbounded range were accepted; a list of logs past calibrate's cap too."""
    with pytest.raises(ArgumentError, match=r"^nodes: list should have at most 256 items"):
        shardplan.sweep(**{**VALID["sweep"], "nodes": list(range(1, 301))})
    with pytest.raises(ArgumentError, match=r"^nodes: a range is not accepted"):
        shardplan.sweep(**{**VALID["sweep"], "nodes": range(1, 100_000)})
    with pytest.raises(ArgumentError, match=r"^logs: value should have at most 256 items"):
        shardplan.calibrate(**{**VALID["calibrate"], "logs": ["a.log"] * 257})
    with pytest.raises(ArgumentError, match=r"^source: .*4,097 characters"):
        shardplan.check("x" * 4097)


def test_validation_error_never_leaks_and_the_call_itself_is_checked():
    for call in (lambda: shardplan.solve("Llama-3.1-8B"),  # missing arguments: Python's TypeError before
                 lambda: shardplan.solve(**VALID["solve"], tpp=2),
                 lambda: shardplan.check(),
                 lambda: shardplan.render("x.yaml", dat_path="a")):
        with pytest.raises(ArgumentError) as refused:
            call()
        assert not isinstance(refused.value, (ValidationError, TypeError)) and "\n" not in str(refused.value)
    with pytest.raises(ArgumentError, match=r"did you mean data_path"):
        shardplan.render("x.yaml", dat_path="a")
    with pytest.raises(ArgumentError, match=r"^solve\(\): missing a required argument: 'global_batch_size'") as refused:
        shardplan.solve("Llama-3.1-8B", "h100-sxm-80gb", 1, seq_length=8)
    assert refused.value.argument == "global_batch_size"


def test_a_path_is_a_source():
    """check / render read a pathlib path as well as a str (the signature says so)."""
    assert shardplan.check(shardplan.examples.path("llama3-70b-h100"), project=False).legal
    with pytest.raises(ArgumentError, match=r"^source: .*NUL"):
        shardplan.check(Path("a\0b"))
