"""Walk a launch script's statements the way bash would, recording variables, until the launch line runs.

Why an interpreter and not a regex: Megatron-LM's example scripts build the argument list in arrays, pick
settings in `if` / `case`, parse options in `while [[ $# -gt 0 ]]; do case $1 in ...` loops, call functions,
source config files and submit themselves through `sbatch FILE` / `srun sh -c "$CMD"`; the launch line only
makes sense after all of that. Followed as bash does, for the values the script can know: `if/elif/else`,
`case` (glob patterns), `for` over words, `while/until` whose test can be evaluated (bounded iterations),
functions with `$1...` and `return`, `unset`, `shift`, `set --`, `break`/`continue`, `exit`, `cd`, `eval`,
`source`/`.` files (read, never run), `bash|sh FILE`, `bash|sh -c STRING`, `sbatch FILE`, here-documents
kept in a variable (`$(cat <<EOF)`, `read -d '' V <<EOF`) or a file (`cat > f <<EOF` then `bash f`).
Not followed, each a warning naming its line, and every variable it could set becomes unknown (so a later
use in a flag that matters is an error naming it, never a silently different value): an `if`/`while` test
on a command's result, C-style `for ((...))`, `read`/`getopts`/`mapfile`/`printf -v`, subshells `( ... )`.
Nothing is ever executed.
"""
from __future__ import annotations

import os
import re
from typing import Callable, Optional

from constraints.script.blocks import (
    ASSIGN_RE,
    SCRIPT_RE,
    Blocks,
    LoopBreak,
    LoopContinue,
    ScriptExit,
    ScriptReturn,
)
from constraints.script.expand import MARK_RE, Shell, Value, mark, read_fields, split_fields
from constraints.script.launchers import LAUNCHERS, SHELLS, bridge_entry, launcher_end, launcher_env, protect_marks, runs_its_argument, sbatch_options
from constraints.script.lex import HEREDOC_MARK, LaunchScriptError, Stmt, scan, without_redirections
from constraints.script.lex import statements as split_statements
from constraints.script.notes import LineNote
from constraints.script.sbatch import sbatch_directives

HEREDOC_RE = re.compile("\x00<<([0-9]+)\x00")
MAX_DEPTH = 32  # nested calls, sourced files and child scripts
FileReader = Callable[[str, int], Optional[tuple[str, str]]]  # (path word, line) -> (shown path, text) or None


class Interpreter(Blocks):
    """Runs statements symbolically; `found` is (launch tokens, command-prefix env) once the launch line runs."""

    def __init__(self, env: dict[str, str], script_path: Optional[str] = None, read_file: Optional[FileReader] = None,
                 job_env: Optional[dict[str, str]] = None):
        """`job_env`: the variables sbatch sets in the job from its #SBATCH lines (sbatch_directives.slurm_output_env);
        they are the job's whatever this process's environment holds, which a warning names where it differs."""
        self.sh = Shell(env, script_path)
        self.found: Optional[tuple[list[str], dict[str, str]]] = None
        self.bridge_launch = ""  # the Megatron-Bridge entry point a command on the path runs (shell_launchers.bridge_entry)
        self.sourced: list[str] = []  # files read on the taken path (sourced or run as child scripts)
        self.exited = ""  # where the taken path reached `exit`, if it did
        self.missing: list[str] = []  # "where:line N: PATH" of files sourced or run that could not be read
        self.warnings: list[str] = []  # "line N: what was not followed, and what became unknown"
        self.misread: list[LineNote] = []  # where sbatch reads a line of a child script otherwise than it looks
        self.functions: dict[str, list[Stmt]] = {}
        self.frames: list[dict[str, tuple]] = []  # per function call: the caller's state of each `local` name
        self.files: dict[str, tuple[str, str]] = {}  # files written by `cat > f <<EOF`: name -> (text, shown)
        self.sbatch: list[list[str]] = []  # options of `sbatch` submissions and of #SBATCH lines of child scripts
        self.read_file = read_file
        self.steps, self.depth = 0, 0
        self.where = ""  # "file:" prefix of warnings from a sourced or child file
        self.allocation: list[str] = []  # where this environment's Slurm allocation differs from the job's
        for name, value in (job_env or {}).items():
            self.sh.set(name, value)
            if env.get(name) not in (None, value):
                self.allocation.append(f"{name}={env[name]} in this environment is not the job's: sbatch sets "
                                       f"{name}={value} from the script's #SBATCH lines")

    # --- simple commands ------------------------------------------------------------------------------------
    def _simple(self, words: list[str], stmt: Stmt) -> None:
        """Commands joined by && || | &, as bash runs them: `&&` runs the next command only if the last status was
        success, `||` only if it was failure, and a skipped command leaves the status as it was. A test (`[ ]`,
        `[[ ]]`, `test`, `true`, `false`) has the status `Blocks._cond` gives it; any other command is taken to succeed
        (as file tests are taken true). A command whose running depends on a test check cannot evaluate is not followed:
        what it could set becomes unknown, with a warning (as for an `if` on such a test)."""
        part: list[str] = []
        status: Optional[bool] = True
        runs: Optional[bool] = True  # whether the command being read runs: yes, no, or unknown (None)
        for w in words + ["&&"]:
            if w not in ("&&", "||", "|", "|&", "&"):
                part.append(w)
                continue
            if part:
                if runs is True:
                    status = self._status(part, stmt)
                    if self.found:
                        return
                elif runs is None:
                    self._not_followed(stmt, f"`{' '.join(part)[:60]}` after a test check cannot evaluate",
                                       [Stmt(" ".join(part), stmt.line)], launch_inside_is_error=True)
                    status = None
            part = []
            if w == "&&":
                runs = status
            elif w == "||":
                runs = None if status is None else not status
            elif w == "&":
                runs = True
            # a pipe's next member runs with its head

    def _status(self, part: list[str], stmt: Stmt) -> Optional[bool]:
        """Run one command of a list; its exit status: a test's value (None when unknown), True for anything else."""
        if part[0] == "test":
            return self._cond(["["] + part[1:] + ["]"], stmt)
        if part[0] in ("[", "[[", "true", "false", "!"):
            return self._cond(part, stmt)
        self._command(part, stmt)
        return True

    def _command(self, words: list[str], stmt: Stmt) -> None:
        here_string = next((w[3:] or (words[k + 1] if k + 1 < len(words) else None)
                            for k, w in enumerate(words) if w.startswith("<<<")), None)  # `<<< WORD` or `<<<WORD`
        if not (words[0] in ("cat", "tee") and HEREDOC_RE.search(" ".join(words))):  # `cat > f <<EOF` writes f
            words = without_redirections(words)
            if not words:
                return
        prefix: dict[str, str] = {}
        k = 0
        holder = next((w for w in words if ASSIGN_RE.match(w) and ASSIGN_RE.match(w).group(3).startswith("<")
                       and not ASSIGN_RE.match(w).group(3).startswith("<(")), None)
        if holder is not None:  # NAME=<fill me in>: bash reads `<` as a redirection and stops at the syntax error
            name = ASSIGN_RE.match(holder).group(1)
            self.sh.set(name, mark(f"{name} (a <placeholder> at {self.where}line {stmt.line})"))
            if words[0] == "export":
                self.sh.exported.add(name)
            self.warnings.append(f"{self.where}line {stmt.line}: {name}=<...> is a placeholder to fill in (bash stops "
                                 f"there with a syntax error); {name} is unknown")
            return
        while k < len(words) and ASSIGN_RE.match(words[k]):
            k += 1
        if k == len(words):
            for w in words:
                self._assign(w, export=False)
            return
        for w in words[:k]:
            name, _, raw = ASSIGN_RE.match(w).groups()
            prefix[name] = self.sh.scalar(raw)
        cmd, args = words[k], words[k + 1:]
        if cmd in ("local", "declare", "typeset") and self.frames and (cmd == "local" or "-g" not in args):
            self._local(args)
            return
        if cmd in ("export", "declare", "typeset", "local", "readonly"):
            for w in args:
                if w.startswith("-"):
                    continue
                if ASSIGN_RE.match(w):
                    self._assign(w, export=cmd == "export" or "-x" in args)
                elif cmd == "export":
                    self.sh.exported.add(w)
            return
        if cmd == "exit":
            raise ScriptExit(f"{self.where}line {stmt.line}: `exit{(' ' + ' '.join(args)) if args else ''}`")
        if cmd == "return":
            raise ScriptReturn()
        if cmd in ("break", "continue"):
            n = int(args[0]) if args and args[0].isdigit() else 1
            raise (LoopBreak if cmd == "break" else LoopContinue)(n)
        if cmd == "unset":
            for w in args:
                if not w.startswith("-"):
                    self.sh.remove(w)
            return
        if cmd == "shift":
            n = self.sh.scalar(args[0]) if args else "1"
            self.sh.shift(int(n) if n.isdigit() else 1)
            return
        if cmd == "set" and args and args[0] == "--":
            self.sh.positional = [t for w in args[1:] for t in self.sh.words(w)]
            self.sh.positional_from_env = False
            return
        if cmd == "read" and here_string is not None and self._read_here_string(args, here_string, prefix.get("IFS")):
            return
        if cmd in ("read", "getopts", "mapfile", "readarray") or cmd == "printf" and args[:1] == ["-v"]:
            self._read_like(cmd, args, stmt)
            return
        if cmd == "cd":
            self._cd(args)
            return
        if cmd in ("source", "."):
            self._source(args, stmt)
            return
        if cmd in self.functions:
            self._call(cmd, [t for w in args for t in self.sh.words(w)])
            return
        if cmd == "eval":
            # bash runs the words as a command line; one whose command check cannot know is not followed, and an
            # unknown argument (`eval torchrun ... ${load_options}`) stays a mark that the launch line then names
            tokens = [t for w in args for t in self.sh.words(w)]
            if not tokens or MARK_RE.search(tokens[0]):
                self._not_followed(stmt, "`eval` of a command check cannot know", [stmt])
                return
            self._sub_script(" ".join(tokens), stmt, same_shell=True)
            return
        if cmd in ("cat", "tee") and HEREDOC_RE.search(" ".join(args)):
            self._write_heredoc(args)
            return
        tokens = [t for w in words[k:] for t in self.sh.words(w)]
        self._run_tokens(tokens, prefix, stmt, words[k:])

    def _run_tokens(self, tokens: list[str], prefix: dict[str, str], stmt: Stmt, raw: list[str]) -> None:
        """A command line after expansion: the launch line, a child script, or a command without effect here."""
        if not tokens:
            return
        if any(SCRIPT_RE.match(os.path.basename(t)) for t in tokens) and \
                (LAUNCHERS.match(os.path.basename(tokens[0])) or SCRIPT_RE.match(os.path.basename(tokens[0]))
                 or MARK_RE.fullmatch(tokens[0])  # `${LAUNCHER} pretrain_gpt.py ...`: a launcher check cannot know
                 or runs_its_argument(tokens)):
            script = next(i for i, t in enumerate(tokens) if SCRIPT_RE.match(os.path.basename(t)))
            self.found = (tokens, {**prefix, **launcher_env(tokens[:script], self.sh.get)})
            return
        self.bridge_launch = self.bridge_launch or bridge_entry(tokens)
        # a launcher/sbatch that runs a shell: find where the shell (or the submitted file) starts
        launch_prefix, j = [], 0
        base = os.path.basename(tokens[0])
        if base == "sbatch":
            opts, j = sbatch_options(tokens)
            hd = HEREDOC_RE.search(" ".join(raw))
            if j < len(tokens) and not HEREDOC_RE.search(tokens[j]):
                # the file's #SBATCH lines first: sbatch's command-line options override them
                self._child_file(tokens[j], tokens[j + 1:], stmt, [])
            elif hd and int(hd.group(1)) < len(self.sh.heredocs):  # `sbatch <<EOF`: the job script is the body
                body, quoted = self.sh.heredocs[int(hd.group(1))]
                self._sub_script(body if quoted else self.sh.heredoc_text(body), stmt, same_shell=False,
                                 shown=f"sbatch here-document (line {stmt.line})")
            self.sbatch.append(opts)
            return
        if LAUNCHERS.match(base) and base not in ("exec", "env"):
            j = launcher_end(tokens)
            launch_prefix = tokens[:j]
        elif base in ("exec", "env"):
            j = 1
            while j < len(tokens) and (tokens[j].startswith("-") or "=" in tokens[j]):
                j += 1
        if j >= len(tokens):
            return
        shell = os.path.basename(tokens[j])
        if shell not in SHELLS:
            return
        rest = tokens[j + 1:]
        while rest and rest[0].startswith("-") and rest[0] != "-c":
            rest = rest[1:]  # bash -l / -x / -e
        if rest[:1] == ["-c"] and len(rest) > 1:
            self._sub_script(rest[1], stmt, same_shell=False, args=rest[2:], prefix=launch_prefix)
        elif rest:
            self._child_file(rest[0], rest[1:], stmt, launch_prefix)
        else:
            hd = HEREDOC_RE.search(" ".join(raw))
            if hd and int(hd.group(1)) < len(self.sh.heredocs):
                body, quoted = self.sh.heredocs[int(hd.group(1))]
                self._sub_script(body if quoted else self.sh.heredoc_text(body), stmt, same_shell=False,
                                 prefix=launch_prefix)

    def _sub_script(self, text: str, stmt: Stmt, same_shell: bool, args: Optional[list[str]] = None,
                    prefix: Optional[list[str]] = None, shown: str = "") -> None:
        """Run script text: in this shell (`eval`, `source`) or as a child that sees only exported variables."""
        if self.depth >= MAX_DEPTH:
            raise LaunchScriptError(f"line {stmt.line}: scripts nest more than {MAX_DEPTH} deep; flatten them")
        self.sh.budget.source(len(text))
        text, marks = protect_marks(text)
        stmts = split_statements(text)
        self.sh.vars.update(marks)
        if same_shell:
            saved = self.sh.heredocs
            self.depth += 1
            try:
                self.block(stmts)
            except ScriptReturn:
                pass
            finally:
                self.depth -= 1
                self.sh.heredocs = saved
            return
        env = dict(self.sh.env_in)
        for n in self.sh.exported:
            v = self.sh.get(n)
            if isinstance(v, str):
                env[n] = v
        for k, a in enumerate(args or [], start=1):
            env[str(k)] = a
        child = Interpreter(env, self.sh.script_path, self.read_file)
        child.sh.budget = self.sh.budget  # one reading, one budget: the child's values count while it runs
        child.functions, child.files, child.depth = {}, self.files, self.depth + 1
        child.sh.vars.update(marks)
        child.where = f"{shown}:" if shown else self.where
        child.steps = self.steps
        directives, ignored = sbatch_directives(text, stmts, child.where)
        child.sbatch += [scan(line, " \t") for line in directives]
        child.misread += ignored
        try:
            child.run(stmts)
        finally:
            self.sh.budget.held_bytes -= child.sh.held_bytes  # the child's variables end with it
        self.steps = child.steps
        self.sourced += [f for f in child.sourced if f not in self.sourced]
        self.warnings += child.warnings
        self.misread += child.misread
        self.missing += child.missing
        self.sbatch += child.sbatch
        for n, v in child.sh.env_taken.items():
            if n not in env or n in self.sh.env_in:
                self.sh.env_taken.setdefault(n, v)
        self.bridge_launch = self.bridge_launch or child.bridge_launch
        if child.found:
            tokens, pre = child.found
            self.found = ((prefix or []) + tokens, pre)

    def _child_file(self, path: str, args: list[str], stmt: Stmt, prefix: list[str]) -> None:
        got = self._open(path, stmt)
        if got is not None:
            shown, text = got
            self._sub_script(text, stmt, same_shell=False, args=args, prefix=prefix, shown=shown)

    def _source(self, args: list[str], stmt: Stmt) -> None:
        if not args:
            return
        path = self.sh.scalar(args[0])
        got = self._open(path, stmt)
        if got is None:
            return
        shown, text = got
        saved_where, saved_pos, saved_from = self.where, self.sh.positional, self.sh.positional_from_env
        self.where = f"{shown}:"
        if len(args) > 1:
            self.sh.positional = [t for w in args[1:] for t in self.sh.words(w)]
            self.sh.positional_from_env = False
        try:
            self._sub_script(text, stmt, same_shell=True)
        finally:
            self.where = saved_where
            if len(args) > 1:
                self.sh.positional, self.sh.positional_from_env = saved_pos, saved_from

    def _open(self, path: str, stmt: Stmt) -> Optional[tuple[str, str]]:
        """A file the script reads or runs: a here-document written earlier, else the reader's resolution."""
        path = self.sh.scalar(path) if not MARK_RE.search(path) else path
        if path in self.files:
            text, shown = self.files[path]
            self.sourced.append(shown)
            return shown, text
        got = self.read_file(path, stmt.line) if self.read_file else None
        if got is None:
            shown = MARK_RE.sub(lambda m: "${" + m.group(1).split(" (")[0] + "}", path)
            self.missing.append(f"{shown} ({self.where}line {stmt.line})")
            return None
        self.sourced.append(got[0])
        return got

    def _write_heredoc(self, args: list[str]) -> None:
        """`cat > FILE <<EOF` / `cat <<EOF > FILE`: keep the text under FILE for a later `bash FILE`."""
        target, body = None, None
        for k, w in enumerate(args):
            hd = HEREDOC_RE.fullmatch(w.lstrip("<-"))
            if HEREDOC_RE.search(w) and hd is None:
                hd = HEREDOC_RE.search(w)
            if hd and int(hd.group(1)) < len(self.sh.heredocs):
                text, quoted = self.sh.heredocs[int(hd.group(1))]
                body = text if quoted else self.sh.heredoc_text(text)
            elif w in (">", ">>") and k + 1 < len(args):
                target = self.sh.scalar(args[k + 1])
            elif w.startswith(">") and len(w) > 1 and not w.startswith(">>"):
                target = self.sh.scalar(w[1:])
            elif w.startswith(">>") and len(w) > 2:
                target = self.sh.scalar(w[2:])
        if target and body is not None and not MARK_RE.search(target):
            self.files[target] = (body, f"here-document {target}")

    def _read_here_string(self, args: list[str], word: str, ifs: Optional[str]) -> bool:
        """`[IFS=,] read [-r] [-a NAME | NAME...] <<< WORD`, as bash reads the line: split by IFS (the command's own
        IFS= prefix, else the shell's), the last NAME taking what is left; without -r a backslash quotes the next
        character. False (not followed) for other options or an unknown value."""
        opts, names, array, k = "", [], None, 0
        while k < len(args):
            a = args[k]
            if a.startswith("-") and len(a) > 1:
                if set(a[1:]) - set("ra"):
                    return False
                opts += a[1:]
                if "a" in a[1:]:
                    if k + 1 >= len(args):
                        return False
                    array, k = args[k + 1], k + 1
            else:
                names.append(a)
            k += 1
        value = self.sh.scalar(word).split("\n", 1)[0]
        if MARK_RE.search(value) or not all(re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", n) for n in names + [array or "A"]):
            return False
        if "r" not in opts:
            value = re.sub(r"\\(.)", r"\1", value)
        ifs = self.sh.ifs() if ifs is None else ifs
        fields = split_fields(value, ifs)
        if array is not None:
            self.sh.set(array, fields)
            return True
        for n, f in zip(names or ["REPLY"], read_fields(value, ifs, len(names or ["REPLY"]))):
            self.sh.set(n, f)
        return True

    def _read_like(self, cmd: str, args: list[str], stmt: Stmt) -> None:
        hd = HEREDOC_RE.search(" ".join(args))
        names = [a for a in args if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", a)]
        if cmd == "read" and hd and names and int(hd.group(1)) < len(self.sh.heredocs):
            text, quoted = self.sh.heredocs[int(hd.group(1))]
            body = text if quoted else self.sh.heredoc_text(text)
            if "-d" in args and len(names) == 1:  # read -r -d '' VAR <<EOF: the whole body
                self.sh.set(names[0], body)
                return
        if cmd == "printf":
            names = args[1:2]
        for n in names or []:
            self.sh.set(n, mark(f"{n} (set by `{cmd}` at {self.where}line {stmt.line}, not followed)"))
        self.warnings.append(f"{self.where}line {stmt.line}: `{cmd}` reads input check does not have; not followed"
                             + (f"; now unknown: {', '.join(names)}" if names else ""))

    def _cd(self, args: list[str]) -> None:
        where = self.sh.scalar(args[0]) if args else self.sh.scalar("$HOME")
        here = self.sh.get("PWD")
        if MARK_RE.search(where) or where == "-":
            self.sh.set("PWD", mark("PWD (after cd)"))
            return
        base = here if isinstance(here, str) else "/"
        self.sh.set("PWD", os.path.normpath(os.path.join(base, where)))

    def _call(self, name: str, args: list[str]) -> None:
        if self.depth >= MAX_DEPTH:
            raise LaunchScriptError(f"function {name} calls nest more than {MAX_DEPTH} deep; simplify the recursion")
        saved, saved_from = self.sh.positional, self.sh.positional_from_env
        self.sh.positional, self.sh.positional_from_env = list(args), False
        self.depth += 1
        self.frames.append({})
        try:
            self.block(self.functions[name])
        except ScriptReturn:
            pass
        finally:
            self.depth -= 1
            self.sh.positional, self.sh.positional_from_env = saved, saved_from
            for local, state in self.frames.pop().items():  # bash's dynamic scope: the caller's values come back
                self.sh.restore(local, state)

    def _local(self, args: list[str]) -> None:
        """`local NAME[=value]` (and `declare` / `typeset` in a function, without -g): NAME belongs to this call, its
        caller's value is put back on return; without a value the local is unset."""
        frame = self.frames[-1]
        for w in args:
            if w.startswith("-"):
                continue
            m = ASSIGN_RE.match(w)
            name = m.group(1) if m else w
            if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
                continue
            if name not in frame:
                frame[name] = self.sh.saved(name)
            if m:
                self._assign(w, export="-x" in args)
            else:
                self.sh.remove(name)

    def _assign(self, word: str, export: bool) -> None:
        """`NAME=value`, `NAME+=value`, `NAME=( ... )` (array; comments and continuations inside), `NAME+=( ... )`."""
        name, plus, raw = ASSIGN_RE.match(word).groups()
        if raw.startswith("(") and raw.endswith(")"):
            value: Value = [t for w in scan(raw[1:-1], " \t\n") for t in self.sh.words(w)]
            old = self.sh.get(name) if plus else None  # a plain `=` does not read the old value (or the env)
            if plus and old is not None:
                value = (old if isinstance(old, list) else [old]) + value
        else:
            value = self.sh.scalar(raw)
            old = self.sh.get(name) if plus else None  # a plain `=` does not read the old value (or the env)
            if plus and isinstance(old, list):
                value = old + [value]
            elif plus and old is not None:
                value = old + value
        self.sh.set(name, value)
        if export:
            self.sh.exported.add(name)


__all__ = ["ASSIGN_RE", "HEREDOC_MARK", "Interpreter", "LAUNCHERS", "SCRIPT_RE"]
