"""The fuzz suite's primitives: a chooser that draws from Hypothesis or from a seeded random.Random, the Case every
generator returns (files to write, the argv or API call that reads them, and what the judge checks), and the hostile
values every generator mixes in.

Why one chooser for two drivers: the Hypothesis tests (tests/test_fuzz_cli.py) draw choices from Hypothesis
(`DataChooser`: reproducible, shrinkable), and the long run (bench/fuzz.py) from a seeded `random.Random`
(`RandomChooser`: ten thousand inputs in one process). A case is plain data, so a failure is replayed by writing the
same files and running the same argv.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field

import yaml

# Values that probe the boundary and past it; the right answer to most of them is a one-line error.
HOSTILE_NUMBERS = [0, -1, 1, 2, 3, 7, 64, 4095, 4096, 4097, 2**31, 2**63, 10**30, 10**400, 1e-300, 1e300, 0.5,
                   float("nan"), float("inf"), -float("inf"), True, None, "8", "", "x" * 300, [], [1, 2], {}, {"a": 1}]
HOSTILE_STRINGS = ["", " ", "x" * 70_000, "Llama-3.1-8B", "../../etc/passwd", "/dev/zero", "\x00", "é" * 50,
                   "$(rm -rf /)", "`id`", "a\u200bb", "\ud800".encode("utf-8", "surrogatepass").decode("utf-8", "replace"),
                   "tt|" * 3000, "([0]*65536)*65536", "Et*16|t*16L", "(tttt)*1000000000"]


class RandomChooser:
    """Choices from a seeded random.Random (the long bench run)."""

    def __init__(self, rnd) -> None:
        self.rnd = rnd

    def int(self, lo: int, hi: int) -> int:
        return self.rnd.randint(lo, hi)


class DataChooser:
    """Choices drawn from Hypothesis (`st.data()`), so a failure shrinks to a small case."""

    def __init__(self, data) -> None:
        from hypothesis import strategies as st

        self.data, self.st = data, st

    def int(self, lo: int, hi: int) -> int:
        return self.data.draw(self.st.integers(lo, hi))


def pick(c, seq):
    return seq[c.int(0, len(seq) - 1)]


def chance(c, percent: int) -> bool:
    return c.int(0, 99) < percent


@dataclass
class Case:
    """Files (relative name -> str / bytes / 'FIFO' / 'DIR' / ('SYMLINK', target)) and the argv that reads them;
    `{dir}` in argv is the case's folder. `kind` names the generator; `keep` lists files that must survive."""

    kind: str
    argv: list
    files: dict = field(default_factory=dict)
    keep: list = field(default_factory=list)
    json_shape: str = ""  # "check" | "solve": the JSON the README documents on exit 0 / 1
    env: dict = field(default_factory=dict)  # the launch environment of the command (restored afterwards)
    # a writer's output read back: {"output": "{dir}/out", "check": [argv of check], "same_as": [argv of the source's check]}
    readback: dict = field(default_factory=dict)
    # a Markdown file the command writes, whose headings and table rows must come only from shardplan
    markdown: dict = field(default_factory=dict)  # {"path": "{dir}/d/SUMMARY.md", "headings": int}
    call: tuple = ()  # an API call instead of argv: (function name in shardplan.__all__, kwargs)
    must_refuse: bool = False  # the right answer is exit 2 (an output onto an input)
    processes: dict = field(default_factory=dict)  # several CLI processes: {"argvs": [...], "sigterm_after_s": float|None, "folder": name}


def hostile_number(c, typical, percent: int = 25):
    return pick(c, HOSTILE_NUMBERS) if chance(c, percent) else typical


def dump_yaml(c, data) -> str:
    """YAML, sometimes as flow JSON (also YAML), sometimes with an alias bomb or deep nesting prepended."""
    text = yaml.safe_dump(data, allow_unicode=True) if chance(c, 70) else json.dumps(data, default=str)
    r = c.int(0, 199)
    if r < 4:
        bomb = 'a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n' + "".join(
            f"a{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * 9) + "]\n" for i in range(1, 9))
        return bomb + text if not text.startswith("{") else bomb
    if r < 7:
        depth = pick(c, [31, 33, 500, 5000])
        return "x: " + "[" * depth + "]" * depth + "\n" + (text if not text.startswith("{") else "")
    if r < 9:
        return text + "\n" + "\x00\xff"
    return text


def special_file(c) -> object:
    return pick(c, ["FIFO", "DIR", ("SYMLINK", "/dev/zero"), ("SYMLINK", "missing"), b"\xff\xfe binary", "x" * ((1 << 20) + 1)])


