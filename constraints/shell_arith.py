"""Bash `$(( ... ))` integer arithmetic over an already-expanded expression, without `eval`.

Why not Python's `eval`: the text comes from a user's script. The expression is parsed with `ast` and only
integer constants, unary +/-, and + - * / % ** are evaluated, with bash's truncating division.
"""
from __future__ import annotations

import ast


def eval_int(text: str) -> int:
    """Value of an integer expression such as `8 * (2 + 1) / 4`; ValueError / SyntaxError / ZeroDivisionError
    for anything else."""
    return _eval(ast.parse(text.strip(), mode="eval").body)


def _eval(node: ast.AST) -> int:
    if isinstance(node, ast.Constant) and isinstance(node.value, int):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        v = _eval(node.operand)
        return -v if isinstance(node.op, ast.USub) else v
    if isinstance(node, ast.BinOp):
        a, b = _eval(node.left), _eval(node.right)
        ops = {ast.Add: lambda: a + b, ast.Sub: lambda: a - b, ast.Mult: lambda: a * b, ast.Pow: lambda: a ** b,
               ast.Div: lambda: _trunc_div(a, b), ast.Mod: lambda: a - b * _trunc_div(a, b)}
        if type(node.op) in ops:
            return ops[type(node.op)]()
    raise ValueError("unsupported expression")


def _trunc_div(a: int, b: int) -> int:
    """Bash integer division truncates toward zero (Python's // floors)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q
