"""Bash `$(( ... ))` integer arithmetic over an already-expanded expression, without `eval`, in bounded time.

Why not Python's `eval` or `ast`: the text comes from a user's script, `ast` recurses (a 1 KB `$((-----...))`
overflowed the stack) and Python integers grow without bound (`$((9**9**9))` ran for minutes). Bash itself
computes in 64-bit two's complement (intmax_t; bash manual, "Shell Arithmetic"), so every intermediate result
wraps to int64 here too, `**` uses modular exponentiation, and the expression is refused past MAX_CHARS
characters or MAX_DEPTH nested operators. Operators and precedence follow the bash manual's table:
unary - + ! ~, then ** (right-associative), * / %, + -, << >>, comparisons, == !=, &, ^, |, &&, ||, ?:.
Numbers: decimal, 0x hex, leading-0 octal, BASE#DIGITS.
"""
from __future__ import annotations

import re

MAX_CHARS = 4096
MAX_DEPTH = 64
_MASK = (1 << 64) - 1
_TOKEN = re.compile(r"\s*(?:([0-9]+#[0-9A-Za-z@_]+|0[xX][0-9A-Fa-f]+|[0-9]+)|(\*\*|<<|>>|<=|>=|==|!=|&&|\|\||[-+*/%<>&^|!~?:()]))")
# binary operators: precedence (higher binds tighter)
_BINARY = {"||": 1, "&&": 2, "|": 3, "^": 4, "&": 5, "==": 6, "!=": 6, "<": 7, "<=": 7, ">": 7, ">=": 7,
           "<<": 8, ">>": 8, "+": 9, "-": 9, "*": 10, "/": 10, "%": 10, "**": 11}


def _wrap(v: int) -> int:
    """Two's-complement int64, as bash's intmax_t arithmetic."""
    v &= _MASK
    return v - (1 << 64) if v >> 63 else v


def _number(text: str) -> int:
    if "#" in text:
        base_s, digits = text.split("#", 1)
        base = int(base_s)
        if not 2 <= base <= 64:
            raise ValueError(f"invalid arithmetic base {base}")
        alphabet = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ@_"
        v = 0
        for ch in digits:
            d = alphabet.index(ch) if base > 36 else alphabet.index(ch.lower())
            if d >= base:
                raise ValueError(f"value too great for base ({text})")
            v = _wrap(v * base + d)
        return v
    if text[:2] in ("0x", "0X"):
        return _wrap(int(text, 16))
    if len(text) > 1 and text[0] == "0":
        if re.search("[89]", text):
            raise ValueError(f"value too great for base ({text})")
        return _wrap(int(text, 8))
    if len(text) > 40:
        raise ValueError(f"number {text[:20]}... has more than 40 digits")
    return _wrap(int(text))


def _tokens(text: str) -> list[str]:
    out, i = [], 0
    while i < len(text):
        m = _TOKEN.match(text, i)
        if not m:
            if text[i:].strip() == "":
                break
            raise ValueError(f"syntax error at `{text[i:i + 20].strip()}`")
        out.append(m.group(1) or m.group(2))
        i = m.end()
    return out


class _Parser:
    def __init__(self, toks: list[str]):
        self.t, self.i, self.depth = toks, 0, 0

    def peek(self) -> str:
        return self.t[self.i] if self.i < len(self.t) else ""

    def take(self) -> str:
        tok = self.peek()
        self.i += 1
        return tok

    def enter(self) -> None:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise ValueError(f"expression nested deeper than {MAX_DEPTH}")

    def expr(self) -> int:
        self.enter()
        cond = self.binary(1)
        if self.peek() == "?":
            self.take()
            a = self.expr()
            if self.take() != ":":
                raise ValueError("`?` without `:`")
            b = self.expr()
            cond = a if cond else b
        self.depth -= 1
        return cond

    def binary(self, min_prec: int) -> int:
        left = self.unary()
        while self.peek() in _BINARY and _BINARY[self.peek()] >= min_prec:
            op = self.take()
            prec = _BINARY[op]
            self.enter()
            right = self.binary(prec if op == "**" else prec + 1)  # ** is right-associative
            self.depth -= 1
            left = _apply(op, left, right)
        return left

    def unary(self) -> int:
        tok = self.take()
        if tok in ("-", "+", "!", "~"):
            self.enter()
            v = self.unary()
            self.depth -= 1
            return {"-": lambda: _wrap(-v), "+": lambda: v, "!": lambda: int(v == 0), "~": lambda: _wrap(~v)}[tok]()
        if tok == "(":
            v = self.expr()
            if self.take() != ")":
                raise ValueError("missing `)`")
            return v
        if tok and (tok[0].isdigit()):
            return _number(tok)
        raise ValueError(f"syntax error: operand expected (error token is \"{tok}\")" if tok else "operand expected")


def _apply(op: str, a: int, b: int) -> int:
    if op in ("/", "%"):
        if b == 0:
            raise ZeroDivisionError("division by 0")
        q = abs(a) // abs(b)
        q = q if (a >= 0) == (b >= 0) else -q  # bash truncates toward zero
        return _wrap(q if op == "/" else a - b * q)
    if op == "**":
        if b < 0:
            raise ValueError("exponent less than 0")
        return _wrap(pow(a, b, 1 << 64))
    if op in ("<<", ">>"):
        b &= 63
        return _wrap(a << b) if op == "<<" else a >> b
    fns = {"+": a + b, "-": a - b, "*": a * b, "&": a & b, "|": a | b, "^": a ^ b, "==": int(a == b),
           "!=": int(a != b), "<": int(a < b), "<=": int(a <= b), ">": int(a > b), ">=": int(a >= b),
           "&&": int(bool(a) and bool(b)), "||": int(bool(a) or bool(b))}
    return _wrap(fns[op])


def eval_int(text: str) -> int:
    """Value of an integer expression such as `8 * (2 + 1) / 4`, as bash computes it; ValueError /
    ZeroDivisionError for anything else, for an expression over MAX_CHARS or nested past MAX_DEPTH."""
    if len(text) > MAX_CHARS:
        raise ValueError(f"expression longer than {MAX_CHARS} characters")
    toks = _tokens(text)
    if not toks:
        return 0  # bash: $(( )) is 0
    p = _Parser(toks)
    v = p.expr()
    if p.i != len(toks):
        raise ValueError(f"syntax error in expression (error token is \"{p.peek()}\")")
    return v
