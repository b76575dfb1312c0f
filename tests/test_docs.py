"""The README and docs/ say what is true: their marked examples run, and every repository path they cite exists.

Runnable examples (the convention, also stated in docs/README.md): a fenced block runs only when one of the HTML
comment lines just above its opening fence is `<!-- docs-test: run -->`, or `<!-- docs-test: run from an empty folder -->`:
then the block runs in an empty temporary folder instead of the repository copy, with that copy on PYTHONPATH (so the
code under test is imported), which shows that it needs no file of the checkout (shardplan.examples names the
bundled examples).
- ```bash: each line starting with `shardplan `, `.venv/bin/shardplan ` or `python -m shardplan ` (joined over trailing
  `\\` continuations) runs as `python -m shardplan ...` in a scratch copy of the repository (one copy per document,
  blocks in order, so a later block reads what an earlier one wrote); other lines (comments, set-up) are skipped. The
  command must exit 0, or N where the line ends with the comment `# exit N`.
- ```python: the block runs in a fresh interpreter in the same scratch copy and must exit 0.
Only quick commands are marked (no GPU, network, torch measurement or bench run).

Cited paths: tokens in README.md, docs/*.md (not docs/facts/) and in the comments and docstrings of the project's
modules that start with a top-level folder of this repository and end in a file extension or `/`
(`constraints/rules/*.py` is a glob) must exist; every missing one is named in one assertion message.
"""
from __future__ import annotations

import ast
import io
import os
import re
import shlex
import shutil
import subprocess
import sys
import tokenize
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
MARK = "<!-- docs-test: run -->"
MARK_EMPTY_FOLDER = "<!-- docs-test: run from an empty folder -->"
COMMAND_PREFIXES = (".venv/bin/shardplan ", "python -m shardplan ", "python3 -m shardplan ", "shardplan ")
EXIT_COMMENT = re.compile(r"#\s*exit\s+(\d+)\s*$")
TIMEOUT_S = 120
SCRATCH_IGNORE = shutil.ignore_patterns(".git", ".venv", "__pycache__", ".hypothesis", ".ruff_cache", ".benchmarks",
                                        ".pytest_cache", "*.egg-info")

# code whose comments and docstrings are checked for cited paths (bench/tools/ holds third-party-facing helpers)
CODE_ROOTS = ("constraints", "measure", "solver", "shardplan", "templates", "hardware", "boundary", "bench")
CODE_EXCLUDED = ("bench/tools/",)
PATH_ROOTS = CODE_ROOTS + ("tests", "docs", ".ci")
# paths of other repositories that look like ours, each where it is cited
ELSEWHERE = {
    "docs/discussions/": "Megatron-LM's docs, cited by constraints/script/launchers.py",
    "docs/performance-summary.md": "Megatron-Bridge's docs, cited by bench/mbridge_presets.py",
}
PATH = re.compile(r"(?<![\w./-])((?:" + "|".join(re.escape(r) for r in PATH_ROOTS) + r")/(?:[\w.*-]+/)*"
                  r"(?:[\w.*-]+\.(?:py|md|yaml|json|csv|j2|sh|png)\b(?!\.?\w))?)")


# --------------------------------------------------------------------------------------------- runnable blocks
def marked_blocks(path: Path) -> list[tuple[int, str, str, bool]]:
    """(line of the fence, language, body, whether it runs from an empty folder) of every block marked runnable."""
    lines = path.read_text(encoding="utf-8").splitlines()
    blocks, i = [], 0
    while i < len(lines):
        m = re.match(r"^```(\w+)\s*$", lines[i])
        if not m:
            i += 1
            continue
        j = i + 1
        while j < len(lines) and not lines[j].startswith("```"):
            j += 1
        k, marked, empty_folder = i - 1, False, False
        while k >= 0 and lines[k].strip().startswith("<!--"):
            marked |= lines[k].strip() in (MARK, MARK_EMPTY_FOLDER)
            empty_folder |= lines[k].strip() == MARK_EMPTY_FOLDER
            k -= 1
        if marked:
            blocks.append((i + 1, m.group(1), "\n".join(lines[i + 1:j]), empty_folder))
        i = j + 1
    return blocks


def commands(body: str) -> list[tuple[list[str], int]]:
    """The shardplan commands of a bash block, as argv after `shardplan`, with the exit status each must give."""
    joined, cur = [], ""
    for line in body.splitlines():
        if line.rstrip().endswith("\\"):
            cur += line.rstrip()[:-1] + " "
            continue
        joined.append(cur + line)
        cur = ""
    if cur:
        joined.append(cur)
    out = []
    for line in joined:
        line = line.strip()
        prefix = next((p for p in COMMAND_PREFIXES if line.startswith(p)), None)
        if prefix is None:
            continue
        m = EXIT_COMMENT.search(line)
        out.append((shlex.split(line[len(prefix):], comments=True), int(m.group(1)) if m else 0))
    return out


def _docs_with_blocks() -> list[Path]:
    return [p for p in DOCS if marked_blocks(p)]


def test_the_readme_has_runnable_examples():
    langs = {lang for _, lang, _, _ in marked_blocks(REPO / "README.md")}
    assert {"bash", "python"} <= langs, f"README.md lost its `{MARK}` examples (found: {sorted(langs)})"


@pytest.mark.parametrize("doc", _docs_with_blocks(), ids=lambda p: str(p.relative_to(REPO)))
def test_marked_examples_run(doc: Path, tmp_path: Path):
    scratch = tmp_path / "repo"
    shutil.copytree(REPO, scratch, ignore=SCRATCH_IGNORE, symlinks=True)
    failures = []
    for line_no, lang, body, empty_folder in marked_blocks(doc):
        where = f"{doc.relative_to(REPO)}:{line_no}"
        cwd, env = scratch, None
        if empty_folder:  # nothing of the checkout at hand: only the installed-like package on the path
            cwd = tmp_path / f"empty-{line_no}"
            cwd.mkdir()
            env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(scratch), os.environ.get("PYTHONPATH")]))}
        if lang == "python":
            runs = [([sys.executable, "-c", body], 0, "python block")]
        elif lang in ("bash", "sh", "shell"):
            runs = [([sys.executable, "-m", "shardplan", *argv], code, "shardplan " + shlex.join(argv))
                    for argv, code in commands(body)]
            if not runs:
                failures.append(f"{where}: marked runnable but holds no shardplan command")
        else:
            failures.append(f"{where}: marked runnable, but a ```{lang} block is neither bash nor python")
            continue
        for argv, want, shown in runs:
            try:
                done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=TIMEOUT_S)
            except subprocess.TimeoutExpired:
                failures.append(f"{where}: {shown[:120]}: still running after {TIMEOUT_S} s")
                continue
            if done.returncode != want:
                tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
                failures.append(f"{where}: {shown[:120]}: exit {done.returncode}, the doc implies {want}: "
                                + " | ".join(tail))
    assert not failures, "\n".join(failures)


# --------------------------------------------------------------------------------------------- cited paths
def code_files() -> list[Path]:
    files = []
    for root in CODE_ROOTS:
        for f in sorted((REPO / root).rglob("*.py")):
            rel = f.relative_to(REPO).as_posix()
            if "__pycache__" not in rel and not rel.startswith(CODE_EXCLUDED):
                files.append(f)
    return files


def comment_and_docstring_text(source: str) -> list[tuple[int, str]]:
    """(line, text) of every comment and docstring of a module."""
    out = []
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.COMMENT:
            out.append((tok.start[0], tok.string))
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                    and isinstance(body[0].value.value, str):
                for k, line in enumerate(body[0].value.value.splitlines()):
                    out.append((body[0].lineno + k, line))
    return out


def cited(text: str) -> list[str]:
    return [m.group(1) for m in PATH.finditer(text)]


def exists(path: str) -> bool:
    if path in ELSEWHERE:
        return True
    if any(c in path for c in "*?["):
        return any(REPO.glob(path.rstrip("/")))
    return (REPO / path).exists()


def test_every_cited_repository_path_exists():
    missing = []
    for doc in DOCS:
        for no, line in enumerate(doc.read_text(encoding="utf-8").splitlines(), 1):
            missing += [f"{doc.relative_to(REPO)}:{no}: {p}" for p in cited(line) if not exists(p)]
    for f in code_files():
        for no, text in comment_and_docstring_text(f.read_text(encoding="utf-8")):
            missing += [f"{f.relative_to(REPO)}:{no}: {p}" for p in cited(text) if not exists(p)]
    assert not missing, f"{len(missing)} cited path(s) do not exist:\n" + "\n".join(missing)


def test_the_path_pattern_reads_what_it_should():
    assert cited("see `constraints/rules/*.py` and tests/data/scripts/shapes/, bench/data/runs.csv.") == [
        "constraints/rules/*.py", "tests/data/scripts/shapes/", "bench/data/runs.csv"]
    assert cited("megatron/core/x.py, measure.kernels.layer_ops, benchmark/attention/, "
                 "measure/kernel_ops.grouped_gemm_ops, constraints/spec.py:Recipe") == ["measure/", "constraints/spec.py"]
    assert cited("hardware/measured/<part>.json") == ["hardware/measured/"]
