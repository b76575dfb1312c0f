"""Run `shardplan check` over every Megatron experiment YAML of a Primus checkout and print a table.

Why: Primus (AMD-AGI/Primus) ships its users' recipes as experiment YAMLs (examples/megatron/configs/<GPU>/*.yaml)
over its own model and trainer files; they are the reference shapes for `check` on a Primus config
(constraints/stacks/primus.py). Each runs on one node of 8 of the GPU its folder names (MI300X -> mi300x, ...),
in a clean environment (every `${NAME:default}` takes its default). Diffusion experiments are skipped: not a
Megatron GPT recipe.

    python -m bench.primus_examples /path/to/Primus     # or PRIMUS_PATH=/path/to/Primus
    python -m bench.primus_examples --markdown

Without a checkout it says so and exits 0 (nothing to measure is not a failure).
"""
from __future__ import annotations

import argparse
import collections
import json
import os
import subprocess
import sys
from pathlib import Path

GPU_FOLDERS = {"MI300X": "mi300x", "MI325X": "mi325x", "MI355X": "mi355x"}


def experiments(root: Path) -> list[tuple[Path, str]]:
    base = root / "examples" / "megatron" / "configs"
    out = []
    for folder, hardware in GPU_FOLDERS.items():
        out += [(p, hardware) for p in sorted((base / folder).glob("*.yaml"))]
    return out


def run_one(path: Path, hardware: str) -> tuple[int, str, int]:
    """(exit status, verdict or the one-line refusal, number of keys not understood)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PRIMUS_")}
    p = subprocess.run([sys.executable, "-m", "shardplan.cli.main", "check", str(path), "--hardware", hardware, "--nodes",
                        "1", "--gpus-per-node", "8", "--json"], capture_output=True, text=True, env=env, timeout=300)
    if p.returncode == 2:
        return 2, p.stderr.strip().removeprefix("error: ")[:160], 0
    data = json.loads(p.stdout)
    verdict = ("legal" if data["legal"] else "illegal") + (", fits" if data["fits"] else ", does not fit")
    return p.returncode, verdict, len(data.get("unknown_flags", []))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("primus", nargs="?", default=os.environ.get("PRIMUS_PATH"))
    ap.add_argument("--markdown", action="store_true")
    args = ap.parse_args(argv)
    if not args.primus or not (Path(args.primus) / "examples" / "megatron" / "configs").is_dir():
        print("no Primus checkout (give its path or set PRIMUS_PATH); nothing to measure")
        return 0
    root = Path(args.primus)
    rows = [(str(p.relative_to(root)), hw, *run_one(p, hw)) for p, hw in experiments(root)]
    if args.markdown:
        print("| experiment | exit | verdict | not understood |\n|---|---|---|---|")
        for name, _, code, verdict, unknown in rows:
            print(f"| {name} | {code} | {verdict} | {unknown} |")
    else:
        for name, hardware, code, verdict, unknown in rows:
            print(f"{code}  {name:70s} {hardware:8s} {verdict}  ({unknown} not understood)")
    counts = collections.Counter(code for _, _, code, _, _ in rows)
    print(f"\n{len(rows)} experiments: {counts[0]} legal and fit, {counts[1]} illegal or over memory, "
          f"{counts[2]} one-line refusals")
    return 0


if __name__ == "__main__":
    sys.exit(main())
