"""Run `shardplan check` over every pretraining script in a Megatron-LM checkout's examples/ and print a table.

Why: `check FILE` is how most users meet shardplan, with the scripts they already launch; Megatron-LM's own
examples are the reference shapes. A script counts as a pretraining script when it launches a pretrain_*.py or
finetune_*.py, or sources / submits / runs (`.`, `source`, `bash`, `sh`, `sbatch`) a script of its folder that
does (the sc21 run_figure_*.sh -> SBATCH.sh -> SRUN.sh chain). Each runs from its own folder (as the examples'
READMEs say) in a clean environment, with only `--hardware`; when check answers that the script does not fix
the world size, it runs again with `--nodes 1 --gpus-per-node 8` (column `cluster`).

    python -m bench.megatron.examples /path/to/Megatron-LM   # or MEGATRON_LM=/path/to/Megatron-LM
    python -m bench.megatron.examples --markdown              # the README table

Without a checkout it says so and exits 0 (nothing to measure is not a failure).
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

LAUNCH_RE = re.compile(r"\b(pretrain|finetune)_[A-Za-z0-9_]*\.py\b")
RUNS_RE = re.compile(r"(?:^|[\s;`/])(?:source|\.|bash|sh|sbatch)\s+[^\n;|&]*?([A-Za-z0-9_.-]+\.sh)\b", re.M)
WORLD_ERROR = "--nodes/--gpus-per-node"
HARDWARE = "h100-sxm-80gb"


@dataclass
class Row:
    script: str
    exit_code: int
    verdict: str
    warnings: int
    not_understood: int
    cluster: str


def pretraining_scripts(examples: Path) -> list[Path]:
    """Scripts that launch a pretrain_*/finetune_*.py, or run/source one of their folder that does (fixed point)."""
    texts = {p: p.read_text(errors="replace").replace("\\\n", " ") for p in sorted(examples.rglob("*.sh"))}
    chosen = {p for p, t in texts.items() if LAUNCH_RE.search(t)}
    grew = True
    while grew:
        grew = False
        for p, t in texts.items():
            if p in chosen:
                continue
            names = set(RUNS_RE.findall(t))
            if any(q.parent == p.parent and q.name in names for q in chosen):
                chosen.add(p)
                grew = True
    return sorted(chosen)


def run_check(script: Path, extra: list[str]) -> tuple[int, dict | None, str]:
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(script.parent), "PWD": str(script.parent)}
    cmd = [sys.executable, "-m", "shardplan", "check", script.name, "--hardware", HARDWARE, "--json",
           "--no-projection", *extra]
    proc = subprocess.run(cmd, cwd=script.parent, env=env, capture_output=True, text=True, timeout=300,
                          stdin=subprocess.DEVNULL)
    data = None
    if proc.stdout.strip().startswith("{"):
        try:
            data = json.loads(proc.stdout)
        except json.JSONDecodeError:
            data = None
    return proc.returncode, data, (proc.stderr.strip().splitlines() or [""])[-1]


def judge(script: Path, examples: Path) -> Row:
    rc, data, err = run_check(script, [])
    cluster = "script"
    if rc == 2 and WORLD_ERROR in err:
        rc, data, err = run_check(script, ["--nodes", "1", "--gpus-per-node", "8"])
        cluster = "1x8 given"
    name = str(script.relative_to(examples))
    if data is None:
        return Row(name, rc, err.removeprefix("error: ")[:200], 0, 0, cluster)
    legal, fits = data.get("legal"), data.get("fits")
    failed = sorted({v["rule"] for v in data.get("violations", []) if v.get("severity", "error") != "warning"})
    verdict = ("legal" if legal else "illegal") + (", fits" if fits else ", does not fit" if fits is False else "")
    if failed:
        verdict += " (" + ", ".join(failed) + ")"
    warnings = [v for v in data.get("violations", []) + data.get("warnings", []) if v.get("severity") != "error"
                and (v in data.get("warnings", []) or v.get("severity") == "warning")]
    return Row(name, rc, verdict, len(warnings), len(data.get("unknown_flags", [])), cluster)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("checkout", nargs="?", default=os.environ.get("MEGATRON_LM"),
                    help="a Megatron-LM checkout (or its examples/ folder); default $MEGATRON_LM")
    ap.add_argument("--markdown", action="store_true", help="print a Markdown table")
    args = ap.parse_args(argv)
    if not args.checkout:
        print("no Megatron-LM checkout given (argument or MEGATRON_LM); nothing to run")
        return 0
    root = Path(args.checkout)
    examples = root if root.name == "examples" else root / "examples"
    if not examples.is_dir():
        print(f"{examples} is not a folder; nothing to run")
        return 0
    rows = [judge(s, examples) for s in pretraining_scripts(examples)]
    head = ("script", "exit", "verdict", "warnings", "not understood", "cluster")
    if args.markdown:
        print("| " + " | ".join(head) + " |\n|" + "---|" * len(head))
        for r in rows:
            verdict = r.verdict.replace("|", "\\|")
            print(f"| {r.script} | {r.exit_code} | {verdict} | {r.warnings} | {r.not_understood} | {r.cluster} |")
    else:
        for r in rows:
            print(f"{r.script:70s} {r.exit_code:>2}  {r.verdict[:90]:90s} {r.warnings:>3} {r.not_understood:>3}  {r.cluster}")
    verdicts = sum(r.exit_code in (0, 1) for r in rows)
    print(f"\n{len(rows)} scripts: {verdicts} verdicts (exit 0/1), {len(rows) - verdicts} unusable input (exit 2), "
          f"{sum(r.exit_code not in (0, 1, 2) for r in rows)} other exits")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
