"""The recipe flags Megatron-Bridge's published benchmarks ran with, per release: what a runs.csv row leaves empty.

Why: the Megatron-Bridge performance tables (MBR rows) publish only the parallel sizes; the MoE dispatcher,
`--overlap-moe-expert-parallel-comm`, selective recompute and CUDA graphs live in the benchmark presets
(`scripts/performance/configs/<family>/*workload_base_configs.py`, one `WorkloadBaseConfig` per model, GPU,
precision and variant) of the release that produced the table. The same recipe moves by up to 1.6x between
releases because these flags change (e.g. 26.06 turned on EP all-to-all overlap and full-iteration CUDA graphs
for MXFP8 Qwen3 on GB200/GB300), so a row's unstated fields are taken from its own release's preset.

`python -m bench.mbridge_presets --extract GITDIR` reads the presets at each release tag of a Megatron-Bridge
git mirror with `ast` (never executing them) and writes bench/mbridge_presets.json; `preset_for` looks a row up.
"""
from __future__ import annotations

import argparse
import ast
import json
import re
import subprocess
from functools import lru_cache
from pathlib import Path
from typing import Optional

DATA = Path(__file__).with_name("mbridge_presets.json")
# release (NeMo container) -> Megatron-Bridge tag whose docs/performance-summary.md first reports it
# (tag dates: v0.2.1 2025-12-09 "25.11", v0.3.0 2026-02-26 "26.02", v0.4.0 2026-04-16 "26.02.01",
# v0.4.2 2026-05-28 "26.04.01", v0.5.0 2026-06-16 "26.06"); 26.04 -> v0.4.1 (between 26.02.01 and 26.04.01),
# 26.06.01 -> v0.5.1. From 26.08 (v0.6.0) the presets are python recipes (src/megatron/bridge/perf_recipes),
# not parsed here: those rows keep bench.runs' defaults.
RELEASE_TAGS = {"25.11": "v0.2.1", "26.02": "v0.3.0", "26.02.01": "v0.4.0", "26.04": "v0.4.1",
                "26.04.01": "v0.4.2", "26.06": "v0.5.0", "26.06.01": "v0.5.1"}
# families with a bundled model (constraints/models); the others (Nemotron-H, VL, WAN) would only bloat the file
FAMILIES = ("deepseek", "gpt_oss", "kimi", "llama", "llama3", "llama31", "qwen", "qwen3")
FLAGS = ("moe_flex_dispatcher_backend", "moe_a2a_overlap", "recompute_modules", "recompute_num_layers",
         "cuda_graph_impl", "cuda_graph_scope", "cutedsl_fused_grouped_mlp", "fp8_dot_product_attention")
SHAPE = ("num_gpus", "tensor_model_parallel_size", "pipeline_model_parallel_size", "virtual_pipeline_model_parallel_size",
         "expert_model_parallel_size", "micro_batch_size", "global_batch_size")


def _git_show(gitdir: str, tag: str, path: str) -> str:
    return subprocess.run(["git", "--git-dir", gitdir, "show", f"{tag}:{path}"], check=True, capture_output=True, text=True).stdout


def _defaults(src: str) -> dict:
    """Field defaults of the `WorkloadBaseConfig` dataclass (literal values only)."""
    for node in ast.parse(src).body:
        if isinstance(node, ast.ClassDef) and node.name == "WorkloadBaseConfig":
            return {s.target.id: ast.literal_eval(s.value) for s in node.body
                    if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name) and s.value is not None}
    raise ValueError("WorkloadBaseConfig not found")


def _presets(src: str, defaults: dict) -> dict[str, dict]:
    """Top-level `NAME = WorkloadBaseConfig(...)`, `NAME = replace(OTHER, ...)` and `NAME = OTHER` assignments."""
    out: dict[str, dict] = {}
    for node in ast.parse(src).body:
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)):
            continue
        name, v = node.targets[0].id, node.value
        if isinstance(v, ast.Name) and v.id in out:
            out[name] = dict(out[v.id])
        elif isinstance(v, ast.Call) and isinstance(v.func, ast.Name) and v.func.id in ("WorkloadBaseConfig", "replace"):
            base = dict(defaults)
            if v.func.id == "replace":
                if not (v.args and isinstance(v.args[0], ast.Name) and v.args[0].id in out):
                    continue
                base = dict(out[v.args[0].id])
            for kw in v.keywords:
                base[kw.arg] = ast.literal_eval(kw.value)
            out[name] = base
    return out


def _canonical(name: str) -> Optional[str]:
    """`X_PRETRAIN_CONFIG_GPU_PREC_V1`; the 25.11 presets are named `X_GPU_PREC_BASE_CONFIG` (one variant)."""
    if "_PRETRAIN_CONFIG_" in name:
        return name
    m = re.match(r"^(.+)_(GB300|GB200|B300|B200|H100)_(.+)_BASE_CONFIG$", name)
    return f"{m.group(1)}_PRETRAIN_CONFIG_{m.group(2)}_{m.group(3)}_V1" if m else None


def extract(gitdir: str) -> dict:
    """{release: {preset name: {shape and flag fields}}} for every release in RELEASE_TAGS."""
    out = {}
    for release, tag in RELEASE_TAGS.items():
        files = subprocess.run(["git", "--git-dir", gitdir, "ls-tree", "-r", "--name-only", tag], check=True,
                               capture_output=True, text=True).stdout.split()
        defaults = _defaults(_git_show(gitdir, tag, "scripts/performance/utils/utils.py"))
        found: dict[str, dict] = {}
        for f in files:
            if f.startswith("scripts/performance/configs/") and f.endswith("workload_base_configs.py") \
                    and f.split("/")[3] in FAMILIES:
                for name, p in _presets(_git_show(gitdir, tag, f), defaults).items():
                    key = _canonical(name)
                    if key:
                        found[key] = {k: p.get(k) for k in SHAPE + FLAGS if p.get(k) is not None}
        out[release] = {"tag": tag, "presets": dict(sorted(found.items()))}
    return out


@lru_cache(maxsize=1)
def _load() -> dict:
    return json.loads(DATA.read_text()) if DATA.exists() else {}


_GPU = (("GB300", "GB300"), ("GB200", "GB200"), ("B300", "B300"), ("B200", "B200"), ("H100", "H100"))


def _stem(model_name: str) -> str:
    """Megatron-Bridge preset prefix of a model: upper case, non-alphanumerics as '_', no '-Instruct' suffix."""
    return re.sub(r"[^A-Z0-9]+", "_", re.sub(r"-instruct$", "", model_name, flags=re.I).upper()).strip("_")


def preset_for(release: str, model_name: str, hardware: str, precision: str, tp: int, pp: int, vpp: int, ep: int,
               mbs: int) -> Optional[dict]:
    """The release's preset for this model, GPU and precision whose parallel sizes match the row (None if no
    preset, or if matching variants disagree on a flag). precision: the row's published text."""
    rel = _load().get(release)
    gpu = next((g for key, g in _GPU if key in hardware.upper()), None)
    if rel is None or gpu is None:
        return None
    p = precision.upper()
    prec = "FP8_MX" if ("MXFP8" in p or "FP8-MX" in p) else "FP8_CS" if "FP8" in p else "BF16"
    head = f"{_stem(model_name)}_PRETRAIN_CONFIG_{gpu}_{prec}_"
    hits = [v for k, v in rel["presets"].items() if k.startswith(head)
            and (v.get("tensor_model_parallel_size"), v.get("pipeline_model_parallel_size"),
                 v.get("expert_model_parallel_size"), v.get("micro_batch_size")) == (tp, pp, ep, mbs)
            and (v.get("virtual_pipeline_model_parallel_size") or 1) == vpp]
    flags = {tuple((k, json.dumps(h.get(k))) for k in FLAGS) for h in hits}
    return {k: hits[0].get(k) for k in FLAGS} if len(flags) == 1 else None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--extract", metavar="GITDIR", required=True, help="Megatron-Bridge git dir (bare mirror)")
    args = ap.parse_args()
    DATA.write_text(json.dumps(extract(args.extract), separators=(",", ":"), sort_keys=True) + "\n")
    print(f"wrote {DATA}")


if __name__ == "__main__":
    main()
