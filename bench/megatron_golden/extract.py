"""Extract Megatron-LM's functional-test memory peaks into bench/data/megatron_golden_memory.jsonl (run once, online).

Why: Megatron-LM's own functional tests are a public set of measured peaks over nearly every feature flag it ships,
from toy models to 7B on A100 / H100 / GB200. Each case directory
NVIDIA/Megatron-LM/tests/functional_tests/test_cases/<model>/<case>/ holds model_config.yaml (MODEL_ARGS: the command-line flags) and
golden_values_<environment>_<platform>.json with the per-iteration `mem-max-allocated-bytes` that Megatron logs
(torch.cuda.max_memory_allocated, cumulative since start: megatron/training/training.py `training_log`). The GPU
count comes from the recipe that schedules the case (NVIDIA/Megatron-LM/tests/test_utils/recipes/<part>/*.yaml `spec.nodes` x
`spec.gpus`, a product may override them).

Usage: python -m bench.megatron_golden.extract GIT_DIR [--commit SHA]   (GIT_DIR: a clone of NVIDIA/Megatron-LM)
The rows keep the source path at the pinned commit so the bench runs offline (bench/data/SOURCES.md).
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import yaml

OUT = Path(__file__).resolve().parents[1] / "data" / "megatron_golden_memory.jsonl"
CASES = "tests/functional_tests/test_cases"
RECIPES = "tests/test_utils/recipes"
METRIC = "mem-max-allocated-bytes"


def part_of(golden_name: str) -> str | None:
    """The GPU part from a golden file's name: golden_values_<env>_<platform>[_2nd].json."""
    name = golden_name.lower()
    if "gb200" in name:
        return "gb200"
    if "h100" in name:
        return "h100"
    if "a100" in name:
        return "a100"
    return None


def git(git_dir: str, *args: str) -> str:
    return subprocess.run(["git", "--git-dir", git_dir, *args], check=True, capture_output=True, text=True).stdout


def world_sizes(git_dir: str, commit: str) -> dict[tuple[str, str, str], tuple[int, int, str]]:
    """(model, case, part folder) -> (nodes, gpus per node, recipe path) from every recipe that lists the case."""
    out: dict[tuple[str, str, str], tuple[int, int, str]] = {}
    for path in git(git_dir, "ls-tree", "-r", "--name-only", commit, RECIPES).split():
        if not path.endswith(".yaml") or path.count("/") < 4:
            continue
        folder = path.split("/")[3]
        try:
            recipe = yaml.safe_load(git(git_dir, "show", f"{commit}:{path}"))
        except yaml.YAMLError:
            continue
        spec = (recipe or {}).get("spec") or {}
        model = spec.get("model")
        for product in (recipe or {}).get("products") or []:
            nodes = int(product.get("nodes", spec.get("nodes", 1)))
            gpus = int(product.get("gpus", spec.get("gpus", 8)))
            for case in product.get("test_case") or []:
                out.setdefault((str(model), str(case), folder), (nodes, gpus, path))
    return out


def flag_value(value) -> str | None:
    """A MODEL_ARGS value as the command line carries it (None: a store_true flag, no value)."""
    if value is True:
        return None
    if isinstance(value, float) and value.is_integer() and abs(value) >= 1e4:
        return str(int(value))
    return str(value)


def rows(git_dir: str, commit: str):
    sizes = world_sizes(git_dir, commit)
    paths = git(git_dir, "ls-tree", "-r", "--name-only", commit, CASES).split()
    configs = sorted(p for p in paths if p.endswith("/model_config.yaml"))
    for config_path in configs:
        case_dir = config_path.rsplit("/", 1)[0]
        model, case = case_dir.split("/")[-2:]
        config = yaml.safe_load(git(git_dir, "show", f"{commit}:{config_path}")) or {}
        model_args = config.get("MODEL_ARGS") or {}
        if not any(str(k).startswith("--") for k in model_args):
            continue  # NeMo-style trainer.* configs: not Megatron's command line
        flags = []
        for key, value in model_args.items():
            if value is False or value is None:
                continue
            flags.append([str(key), flag_value(value)])
        for golden_path in sorted(p for p in paths if p.startswith(case_dir + "/golden_values") and p.endswith(".json")):
            part = part_of(golden_path.rsplit("/", 1)[1])
            if part is None:
                continue
            try:
                golden = json.loads(git(git_dir, "show", f"{commit}:{golden_path}"))
            except json.JSONDecodeError:
                continue
            metric = golden.get(METRIC)
            if not isinstance(metric, dict) or not isinstance(metric.get("values"), dict):
                continue
            values = {int(k): v for k, v in metric["values"].items() if isinstance(v, (int, float))}
            if not values:
                continue
            folder = "gb200" if part == "gb200" else "h100"
            nodes, gpus, recipe = sizes.get((model, case, folder), (None, None, None))
            if nodes is None:  # a case scheduled by no recipe: Megatron's default 1 node x 8 GPUs (4 on GB200 trays)
                nodes, gpus, recipe = 1, 4 if part == "gb200" else 8, None
            first = min(values)
            yield {
                "case": f"{model}/{case}", "golden": golden_path.rsplit("/", 1)[1], "part": part,
                "nodes": nodes, "gpus_per_node": gpus, "recipe": recipe,
                "max_allocated_iter1_bytes": int(values[first]), "first_iteration": first,
                "max_allocated_bytes": int(max(values.values())), "last_iteration": max(values),
                "env": {str(k): str(v) for k, v in (config.get("ENV_VARS") or {}).items()},
                "flags": flags, "source": f"NVIDIA/Megatron-LM@{commit}:{golden_path}",
            }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("git_dir")
    parser.add_argument("--commit", default="HEAD")
    args = parser.parse_args(argv)
    commit = git(args.git_dir, "rev-parse", args.commit).strip()
    extracted = list(rows(args.git_dir, commit))
    OUT.write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in extracted))
    print(f"{len(extracted)} rows -> {OUT}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
