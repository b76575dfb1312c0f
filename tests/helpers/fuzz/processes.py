"""Second-round process inputs (issue 33): writers that race, and commands stopped by SIGTERM.

- `concurrent_case`: two `solve --render DIR` into one folder at once. Afterwards the folder is whole: SUMMARY.md
  names every script in it and each script it names exists (two at once once left scripts SUMMARY.md did not list).
- `sigterm_case`: a `solve --render` or `report` sent SIGTERM part-way. It exits without a traceback and leaves no
  staging folder or `.tmp` file (SIGINT never did; SIGTERM did).
These run real processes (tests/helpers/fuzz/run.py), so they cost seconds each and are a small share of a run.
"""
from __future__ import annotations

from tests.helpers.fuzz.choice import Case, pick

SOLVE = ["solve", "--model", "Llama-3.1-8B", "--hardware", "h100-sxm-80gb", "--nodes", "1", "--gpus-per-node", "8",
         "--seq-length", "1024", "--global-batch-size", "16", "--proposer", "none", "--max-time", "60"]


def concurrent_case(c) -> Case:
    argvs = [SOLVE + ["--top", str(pick(c, [1, 2, 3])), "--render", "{dir}/out"] for _ in range(2)]
    return Case("concurrent", [], processes={"argvs": argvs, "sigterm_after_s": None, "folder": "out"})


def sigterm_case(c) -> Case:
    argv = pick(c, [SOLVE + ["--top", "3", "--render", "{dir}/out"],
                    ["report", "solve", *SOLVE[1:], "--top", "2", "-o", "{dir}/out/r.html"],
                    ["report", "check", "constraints/examples/llama3-70b-h100.yaml", "-o", "{dir}/out/r.html",
                     "--trace", "{dir}/out/t.json"]])
    files = {"out/keep.txt": "mine\n"}
    return Case("sigterm", [], files, keep=["out/keep.txt"],
                processes={"argvs": [argv], "sigterm_after_s": pick(c, [0.3, 0.8, 1.5, 2.5, 4.0]), "folder": "out"})
