"""The two small languages inside Megatron flag values: `--moe-layer-freq` lists and pipeline layouts.

Why its own module: both are mini-parsers (a python list expression, a repeat-and-separator string) that
must be read safely, without eval(), and bounded against huge expansions; that is a different concern from
mapping flags onto spec fields, and easier to test and review alone.
"""
from __future__ import annotations

import ast
import re
from typing import Any

from boundary.expand import expand_groups
from boundary.show import shown
from constraints.megatron.errors import MegatronArgsError
from constraints.spec import MAX_NUM_LAYERS


def moe_layer_pattern(freq: Any, num_layers: int, flag: str = "--moe-layer-freq") -> tuple[bool, ...]:
    """--moe-layer-freq: an int N means layer i is MoE iff i % N == 0; else a python list expression such as
    "([0]*3+[1]*58)" (arguments.py moe_freq_type / _eval_pattern). Evaluated over int lists only, never eval().
    `flag`: the flag whose value this is (--window-attn-skip-freq and --no-rope-freq take the same grammar), for the
    messages."""
    if num_layers > MAX_NUM_LAYERS:  # checked before a per-layer tuple is built (10^9 layers took GBs and minutes)
        raise MegatronArgsError(f"--num-layers {num_layers:,} is above the {MAX_NUM_LAYERS} layers shardplan models "
                                "(the deepest published LLMs have under 200); give the model's layer count")
    text = str(freq).strip()
    if re.fullmatch(r"[0-9]+", text):
        n = int(text)
        if n <= 0:
            raise MegatronArgsError(f"{flag} {text} must be positive; pass 1 for all-MoE layers")
        return tuple(i % n == 0 for i in range(num_layers))
    try:
        pattern = _eval_list(ast.parse(text, mode="eval").body)
    except _TooLong:
        raise MegatronArgsError(f"{flag} {text[:60]!r} builds a list longer than {MAX_NUM_LAYERS} entries "
                                "(one per layer) before it ends; give one 0/1 entry per layer") from None
    except (SyntaxError, ValueError, RecursionError):
        raise MegatronArgsError(f"{flag} {shown(text)} is not an int or a list expression like ([0]*3+[1]*58)") from None
    if len(pattern) != num_layers or any(v not in (0, 1) for v in pattern):
        raise MegatronArgsError(f"{flag} gives {len(pattern)} entries of 0/1, expected {num_layers} (--num-layers)")
    return tuple(v == 1 for v in pattern)


class _TooLong(Exception):
    """A --moe-layer-freq list past MAX_NUM_LAYERS entries, refused before it is built."""


def _eval_list(node: ast.AST) -> Any:
    """A list built from int constants, `+` of lists and `*` by an int; ValueError for anything else."""
    if isinstance(node, ast.List):
        return [_eval_list(e) for e in node.elts]
    if isinstance(node, ast.Constant) and isinstance(node.value, int) and abs(node.value) <= 1 << 16:
        return node.value
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Mult)):
        a, b = _eval_list(node.left), _eval_list(node.right)
        # one entry per layer: no list on the way to a valid pattern is longer than MAX_NUM_LAYERS, so a longer
        # one is refused before it is built (`([0]*65536)*65536` once built 4 G entries)
        if isinstance(node.op, ast.Add) and isinstance(a, list) and isinstance(b, list):
            if len(a) + len(b) > MAX_NUM_LAYERS:
                raise _TooLong()
            return a + b
        if isinstance(node.op, ast.Mult) and isinstance(a, list) != isinstance(b, list):
            reps = b if isinstance(a, list) else a
            items = a if isinstance(a, list) else b
            if 0 <= reps <= 1 << 16:
                if len(items) * reps > MAX_NUM_LAYERS:
                    raise _TooLong()
                return a * b
    raise ValueError("not a list pattern")


def layout_stages(layout: str) -> int:
    """Stages in a --pipeline-model-parallel-layout: commas are cosmetic, `(...)*n` repeats, `|` separates
    (pipeline_parallel_layer_layout.py parse_str_to_list)."""
    text = expand_groups(re.compile(r"\(([^()]*)\)\*([0-9]+)"), layout.replace(",", ""),
                         "--pipeline-model-parallel-layout", MegatronArgsError)  # sized before it is built
    return text.count("|") + 1
