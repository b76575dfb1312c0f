"""What reading one launch script may cost: bytes held by variables, bytes built by expansions, bytes of script text
read (`source`, child scripts, `eval`), and loop passes.

Why budgets on values and not only on statements: constraints.script.blocks.MAX_STEPS bounds the statements run,
but a statement's cost is the size of what it expands. A 1.2 KB script that doubles a string (`X="$X$X"`) a dozen
times, or sources a 1 MiB file thousands of times, runs few statements and never finishes (issue 33). Each budget is
far above a real launch script: Megatron-LM's examples/ scripts hold under 10 KiB in all their variables and
source at most a few KiB; a data blend of 1,000 paths is ~100 KiB held, and building it in a loop (`DATA="$DATA w
path"`, each pass expanding the string so far) expands ~50 KiB a pass on average, under 16 MiB for 300 passes.
Expansion is the cost that sets the time, linear since constraints.script.unquote replaced shlex (which was
quadratic in a word's length): 4 MiB of expansions took 0.6 s on this project's 2-core machine
(tests/constraints/script/test_script_budgets.py), so MAX_EXPANDED_BYTES bounds a reading to a few seconds.
Past a budget the reading stops with one line naming the script line (ScriptBudgetError), exit 2.
"""
from __future__ import annotations

from constraints.script.lex import LaunchScriptError

KIB = 1024
MIB = 1024 * KIB
MAX_VARIABLE_BYTES = 1 * MIB  # held by all variables (and array elements) at once
MAX_EXPANDED_BYTES = 16 * MIB  # produced by all expansions of the run together
MAX_SOURCED_BYTES = 4 * MIB  # of script text read by `source`, child scripts and `eval`, together
MAX_LOOP_PASSES = 10_000  # passes of all `for` / `while` / `until` loops together
MAX_BRACE_WORDS = 10_000  # words one brace expansion makes (`{1..1000000000}` would make a billion)


class ScriptBudgetError(LaunchScriptError):
    """A budget of this module is spent; `located` once the message names the script line."""

    located = False


def value_bytes(value) -> int:
    """The bytes a variable's value holds: a scalar's length, or its elements' lengths summed."""
    if isinstance(value, list):
        return sum(len(e) for e in value if isinstance(e, str))
    return len(value) if isinstance(value, str) else 0


class Budget:
    """The counts of one reading, shared by the script, the files it sources and the child scripts it runs."""

    def __init__(self) -> None:
        self.held_bytes = 0
        self.expanded_bytes = 0
        self.sourced_bytes = 0
        self.loop_passes = 0

    def hold(self, delta_bytes: int) -> None:
        self.held_bytes += delta_bytes
        if self.held_bytes > MAX_VARIABLE_BYTES:
            raise ScriptBudgetError(f"the script's variables hold more than {MAX_VARIABLE_BYTES // MIB} MiB (a value "
                                    "that doubles?); no launch script needs that much, simplify it")

    def expand(self, produced_bytes: int) -> None:
        self.expanded_bytes += produced_bytes
        if self.expanded_bytes > MAX_EXPANDED_BYTES:
            raise ScriptBudgetError(f"the script's expansions build more than {MAX_EXPANDED_BYTES // MIB} MiB in all "
                                    "(a large value expanded over and over?); simplify it")

    def source(self, text_bytes: int) -> None:
        self.sourced_bytes += text_bytes
        if self.sourced_bytes > MAX_SOURCED_BYTES:
            raise ScriptBudgetError(f"the script reads more than {MAX_SOURCED_BYTES // MIB} MiB of script text through "
                                    "source, eval and child scripts (a file read over and over?); simplify it")

    def loop_pass(self) -> None:
        self.loop_passes += 1
        if self.loop_passes > MAX_LOOP_PASSES:
            raise ScriptBudgetError(f"the script's loops run more than {MAX_LOOP_PASSES:,} passes (a loop that does "
                                    "not end?); simplify the loop")


__all__ = ["Budget", "MAX_BRACE_WORDS", "MAX_EXPANDED_BYTES", "MAX_LOOP_PASSES", "MAX_SOURCED_BYTES", "MAX_VARIABLE_BYTES",
           "ScriptBudgetError", "value_bytes"]
