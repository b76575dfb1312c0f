"""The two small languages inside Megatron flag values: `--moe-layer-freq` lists and pipeline layouts.

Why its own module: both are mini-parsers (a python list expression, a repeat-and-separator string) that
must be read safely, without eval(), and bounded against huge expansions; that is a different concern from
mapping flags onto spec fields, and easier to test and review alone.
"""
from __future__ import annotations

import ast
import re
from typing import Any

from constraints.megatron_errors import MegatronArgsError


def moe_layer_pattern(freq: Any, num_layers: int) -> tuple[bool, ...]:
    """--moe-layer-freq: an int N means layer i is MoE iff i % N == 0; else a python list expression such as
    "([0]*3+[1]*58)" (arguments.py moe_freq_type / _eval_pattern). Evaluated over int lists only, never eval()."""
    text = str(freq).strip()
    if re.fullmatch(r"[0-9]+", text):
        n = int(text)
        if n <= 0:
            raise MegatronArgsError(f"--moe-layer-freq {text} must be positive; pass 1 for all-MoE layers")
        return tuple(i % n == 0 for i in range(num_layers))
    try:
        pattern = _eval_list(ast.parse(text, mode="eval").body)
    except (SyntaxError, ValueError):
        raise MegatronArgsError(f"--moe-layer-freq {text!r} is not an int or a list expression like ([0]*3+[1]*58)") from None
    if len(pattern) != num_layers or any(v not in (0, 1) for v in pattern):
        raise MegatronArgsError(f"--moe-layer-freq gives {len(pattern)} entries of 0/1, expected {num_layers} (--num-layers)")
    return tuple(v == 1 for v in pattern)


def _eval_list(node: ast.AST) -> Any:
    """A list built from int constants, `+` of lists and `*` by an int; ValueError for anything else."""
    if isinstance(node, ast.List):
        return [_eval_list(e) for e in node.elts]
    if isinstance(node, ast.Constant) and isinstance(node.value, int) and abs(node.value) <= 1 << 16:
        return node.value
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Mult)):
        a, b = _eval_list(node.left), _eval_list(node.right)
        if isinstance(node.op, ast.Add) and isinstance(a, list) and isinstance(b, list):
            return a + b
        if isinstance(node.op, ast.Mult) and isinstance(a, list) != isinstance(b, list):
            reps = b if isinstance(a, list) else a
            if 0 <= reps <= 1 << 16:
                return a * b
    raise ValueError("not a list pattern")


def layout_stages(layout: str) -> int:
    """Stages in a --pipeline-model-parallel-layout: commas are cosmetic, `(...)*n` repeats, `|` separates
    (pipeline_parallel_layer_layout.py parse_str_to_list)."""
    text = layout.replace(",", "")
    pat = re.compile(r"\(([^()]*)\)\*([0-9]+)")
    while pat.search(text):
        text = pat.sub(lambda m: m.group(1) * int(m.group(2)), text, count=1)
        if len(text) > 1 << 20:
            raise MegatronArgsError("--pipeline-model-parallel-layout expands past 1M characters; check its repeat counts")
    return text.count("|") + 1
