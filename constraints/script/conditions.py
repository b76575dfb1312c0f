"""The test of an `if` / `elif` in a launch script: which branch the script takes, without running it.

Launch scripts branch on string settings (`if [[ "$PRECISION" == fp8 ]]`), so string and integer tests are
evaluated against the known variables; file tests (`-f`, `-d`, ...) count as true, as if the files a launch
script checks for exist. A test of a value check cannot know (a command's output `$(nvidia-smi ...)`) and anything
else is a one-line LaunchScriptError rather than a guess, which the caller turns into "not followed".
"""
from __future__ import annotations

import fnmatch

from constraints.script.expand import MARK_RE, Shell
from constraints.script.lex import LaunchScriptError

_INT_TESTS = {"-eq": int.__eq__, "-ne": int.__ne__, "-lt": int.__lt__, "-le": int.__le__, "-gt": int.__gt__,
              "-ge": int.__ge__}
_FILE_TESTS = ("-f", "-d", "-e", "-r", "-s", "-x", "-w")


class Condition:
    """`[[ ... ]]`, `[ ... ]`, `true`, `false`, joined by && / || and negated by !; file tests count as true."""

    def __init__(self, sh: Shell, words: list[str]):
        self.sh, self.words, self.text = sh, words, " ".join(words)

    def fail(self) -> LaunchScriptError:
        return LaunchScriptError(f"cannot evaluate `if {self.text}`; shardplan only reads string tests [ -n/-z/==/!= ]")

    def evaluate(self) -> bool:
        result, op, i, w = None, None, 0, self.words
        while i < len(w):
            neg = w[i] == "!"
            i += neg
            if i >= len(w):
                raise self.fail()
            if w[i] in ("[[", "["):
                close = "]]" if w[i] == "[[" else "]"
                try:
                    j = w.index(close, i)
                except ValueError:
                    raise self.fail() from None
                val = self._test(w[i + 1:j])
                i = j + 1
            elif w[i] in ("true", "false", ":"):
                val, i = w[i] != "false", i + 1
            else:
                raise self.fail()
            val = val != neg
            result = val if op is None else (result and val if op == "&&" else result or val)
            if i < len(w):
                if w[i] not in ("&&", "||"):
                    raise self.fail()
                op, i = w[i], i + 1
        if result is None:
            raise self.fail()
        return result

    def _test(self, w: list[str]) -> bool:
        for k, tok in enumerate(w):  # lowest precedence first: || / -o, then && / -a
            if tok in ("||", "-o"):
                return self._test(w[:k]) or self._test(w[k + 1:])
        for k, tok in enumerate(w):
            if tok in ("&&", "-a"):
                return self._test(w[:k]) and self._test(w[k + 1:])
        if w and w[0] == "!":
            return not self._test(w[1:])
        s = [self.sh.scalar(x) for x in w]
        if len(s) == 2 and w[0] in _FILE_TESTS:
            return True  # assume the files a launch script checks for exist
        if any(MARK_RE.search(x) for x in s):  # `$(cmd)`, a value check cannot know: the branch is unknown, not taken
            raise self.fail()
        if len(s) == 1:
            return s[0] != ""
        if len(s) == 2 and w[0] in ("-n", "-z"):
            return (s[1] != "") == (w[0] == "-n")
        if len(s) == 3 and w[1] in ("==", "=", "!="):
            hit = fnmatch.fnmatchcase(s[0], s[2]) if w[1] == "==" else s[0] == s[2]
            return hit != (w[1] == "!=")
        if len(s) == 3 and w[1] in _INT_TESTS:
            try:
                return _INT_TESTS[w[1]](int(s[0]), int(s[2]))
            except ValueError:
                raise self.fail() from None
        raise self.fail()
