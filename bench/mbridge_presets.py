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
# 26.06.01 -> v0.5.1. From 26.08 (v0.6.0, 2026-08-19) the presets are python recipe functions
# (src/megatron/bridge/perf_recipes/<family>/<gpu>/*.py, `_recipe_presets`); the model verification cards
# (MBCARD rows, "canonical ... recipe") were run at the commit they cite.
RELEASE_TAGS = {"25.11": "v0.2.1", "26.02": "v0.3.0", "26.02.01": "v0.4.0", "26.04": "v0.4.1",
                "26.04.01": "v0.4.2", "26.06": "v0.5.0", "26.06.01": "v0.5.1", "26.08": "v0.6.0",
                "card@067f987d": "067f987df03b8355b03192d88d70f1709fedf51a"}
# families with a bundled model (constraints/models); the others (VL, WAN) would only bloat the file
FAMILIES = ("deepseek", "gpt_oss", "kimi", "llama", "llama3", "llama31", "nemotronh", "qwen", "qwen3")
# cpu_offloading_num_layers: the workload presets (to 26.06.01) turn offloading on with it
# (scripts/performance/utils/overrides.py _set_recompute_overrides sets cpu_offloading = True when it is above 0)
FLAGS = ("moe_flex_dispatcher_backend", "moe_a2a_overlap", "recompute_modules", "recompute_num_layers",
         "cuda_graph_impl", "cuda_graph_scope", "cutedsl_fused_grouped_mlp", "fp8_dot_product_attention",
         "cpu_offloading_num_layers")
SHAPE = ("num_gpus", "tensor_model_parallel_size", "pipeline_model_parallel_size", "virtual_pipeline_model_parallel_size",
         "expert_model_parallel_size", "micro_batch_size", "global_batch_size")


def _git_show(gitdir: str, tag: str, path: str) -> str:
    return subprocess.run(["git", "--git-dir", gitdir, "show", f"{tag}:{path}"], check=True, capture_output=True, text=True).stdout


def preset_defaults(src: str) -> dict:
    """Field defaults of the `WorkloadBaseConfig` dataclass (literal values only)."""
    for node in ast.parse(src).body:
        if isinstance(node, ast.ClassDef) and node.name == "WorkloadBaseConfig":
            return {s.target.id: ast.literal_eval(s.value) for s in node.body
                    if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name) and s.value is not None}
    raise ValueError("WorkloadBaseConfig not found")


def preset_table(src: str, defaults: dict) -> dict[str, dict]:
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


_RECIPE_NAME = re.compile(r"^(.+)_pretrain_\d+gpu_(gb300|gb200|b300|b200|h100)_(bf16|fp8cs|fp8mx|fp8sc|nvfp4)(_[a-z0-9_]+)?_config$")
_RECIPE_PREC = {"bf16": "BF16", "fp8cs": "FP8_CS", "fp8mx": "FP8_MX", "fp8sc": "FP8_SC", "nvfp4": "NVFP4"}
# recipe attribute (cfg.model.* / cfg.train.* / cfg.comm_overlap.*) -> preset field
# (Bridge's own scripts/performance/utils/utils.py reads cutedsl_fused_grouped_mlp back from the model's
# use_transformer_engine_op_fuser, and overrides.py sets the one from the other)
_RECIPE_FIELDS = {"overlap_moe_expert_parallel_comm": "moe_a2a_overlap", "fp8_dot_product_attention": "fp8_dot_product_attention",
                  "use_transformer_engine_op_fuser": "cutedsl_fused_grouped_mlp",
                  **{k: k for k in SHAPE + FLAGS + ("recompute_granularity", "moe_token_dispatcher_type", "cpu_offloading")}}


class _Modules:
    """Recipe modules by dotted name: their functions and `from X import a as b` names, so a call resolves to the
    function that module really imports (perf and base recipes reuse function names)."""

    def __init__(self) -> None:
        self.funcs: dict[str, dict[str, ast.FunctionDef]] = {}
        self.imports: dict[str, dict[str, tuple[str, str]]] = {}

    def add(self, path: str, src: str) -> None:
        mod = path[len("src/"):-len(".py")].replace("/", ".").removesuffix(".__init__")
        tree = ast.parse(src)
        self.funcs[mod] = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
        self.imports[mod] = {a.asname or a.name: (n.module, a.name) for n in tree.body
                             if isinstance(n, ast.ImportFrom) and n.module for a in n.names}

    def resolve(self, mod: str, name: str, depth: int = 0) -> Optional[tuple[str, ast.FunctionDef]]:
        if name in self.funcs.get(mod, {}):
            return mod, self.funcs[mod][name]
        imp = self.imports.get(mod, {}).get(name)
        return self.resolve(imp[0], imp[1], depth + 1) if imp and depth < 8 else None


def _walk(mod: str, body: list, env: dict, mods: _Modules, state: dict, depth: int = 0) -> None:
    """Apply a recipe function's unconditional `cfg.<group>.<attr> = literal` statements, `cfg = f()` and
    `helper(cfg, ...)` calls (resolved through the module's imports, recursively); `if` blocks are not followed."""
    if depth > 8:
        return
    for st in body:
        if isinstance(st, ast.Assign) and len(st.targets) == 1:
            t, v = st.targets[0], st.value
            if isinstance(t, ast.Name) and isinstance(v, ast.Call) and isinstance(v.func, ast.Name):
                hit = mods.resolve(mod, v.func.id)
                if hit:
                    _walk(hit[0], hit[1].body, {}, mods, state, depth + 1)
            elif isinstance(t, ast.Attribute) and t.attr == "comm_overlap" and isinstance(v, ast.Call):
                state["moe_a2a_overlap"] = False  # a fresh CommOverlapConfig: overlap off unless given
                for kw in v.keywords:
                    if kw.arg in _RECIPE_FIELDS:
                        state[_RECIPE_FIELDS[kw.arg]] = ast.literal_eval(kw.value)
            elif isinstance(t, ast.Attribute) and t.attr in _RECIPE_FIELDS:
                try:
                    val = env[v.id] if isinstance(v, ast.Name) and v.id in env else ast.literal_eval(v)
                except ValueError:
                    continue
                state[_RECIPE_FIELDS[t.attr]] = val
        elif isinstance(st, ast.Expr) and isinstance(st.value, ast.Call) and isinstance(st.value.func, ast.Name):
            hit = mods.resolve(mod, st.value.func.id)
            if not hit:
                continue
            args = hit[1].args
            names = [a.arg for a in args.args + args.kwonlyargs]
            defaults = dict(zip([a.arg for a in args.args][-len(args.defaults):], args.defaults)) if args.defaults else {}
            defaults.update({a.arg: d for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None})
            sub = {k: ast.literal_eval(d) for k, d in defaults.items() if isinstance(d, ast.Constant)}
            sub.update({kw.arg: ast.literal_eval(kw.value) for kw in st.value.keywords
                        if kw.arg in names and isinstance(kw.value, ast.Constant)})
            _walk(hit[0], hit[1].body, sub, mods, state, depth + 1)


def _recipe_presets(gitdir: str, rev: str, files: list[str]) -> dict[str, dict]:
    """Presets from the python perf recipes (v0.6.0 on), named like the workload presets (variant suffix -> V).
    A perf recipe starts from its model's base recipe (src/megatron/bridge/recipes/<family>/..., e.g. the
    DeepSeek-V3 H100 base sets moe_flex_dispatcher_backend="hybridep"), so both trees are read."""
    mods = _Modules()
    for f in files:
        if f.endswith(".py") and (f.startswith("src/megatron/bridge/recipes/") or f.startswith("src/megatron/bridge/perf_recipes/")) \
                and (f.split("/")[4] in FAMILIES or f.split("/")[4] in ("_common.py", "__init__.py")):
            mods.add(f, _git_show(gitdir, rev, f))
    out = {}
    for mod, funcs in mods.funcs.items():
        if ".perf_recipes." not in mod:
            continue
        for name, fn in funcs.items():
            m = _RECIPE_NAME.match(name)
            if not m:
                continue
            state: dict = {}
            _walk(mod, fn.body, {}, mods, state)
            if state.get("recompute_granularity") != "selective":
                state.pop("recompute_modules", None)
            if not state.get("cpu_offloading"):
                # Megatron-Core offloads only when TransformerConfig.cpu_offloading is set (transformer_block.py
                # get_cpu_offload_context(self.config.cpu_offloading, ...)); a recipe that sets the layer count alone
                # (gpt_oss/common.py: 95) offloads nothing
                state.pop("cpu_offloading_num_layers", None)
            variant = (m.group(4) or "").strip("_").upper() or "V1"
            key = f"{m.group(1).upper()}_PRETRAIN_CONFIG_{m.group(2).upper()}_{_RECIPE_PREC[m.group(3)]}_{variant}"
            out[key] = {k: state[k] for k in SHAPE + FLAGS if state.get(k) is not None}
    return out


def extract(gitdir: str) -> dict:
    """{release: {preset name: {shape and flag fields}}} for every release in RELEASE_TAGS."""
    out = {}
    for release, tag in RELEASE_TAGS.items():
        files = subprocess.run(["git", "--git-dir", gitdir, "ls-tree", "-r", "--name-only", tag], check=True,
                               capture_output=True, text=True).stdout.split()
        if "scripts/performance/utils/utils.py" not in files or not any(f.endswith("workload_base_configs.py") and
                                                                       "configs/" in f for f in files):
            out[release] = {"tag": tag, "presets": dict(sorted(_recipe_presets(gitdir, tag, files).items()))}
            continue
        defaults = preset_defaults(_git_show(gitdir, tag, "scripts/performance/utils/utils.py"))
        found: dict[str, dict] = {}
        for f in files:
            if f.startswith("scripts/performance/configs/") and f.endswith("workload_base_configs.py") \
                    and f.split("/")[3] in FAMILIES:
                for name, p in preset_table(_git_show(gitdir, tag, f), defaults).items():
                    key = _canonical(name)
                    if key:
                        found[key] = {k: p.get(k) for k in SHAPE + FLAGS if p.get(k) is not None}
        out[release] = {"tag": tag, "presets": dict(sorted(found.items()))}
    return out


@lru_cache(maxsize=1)
def _load() -> dict:
    return json.loads(DATA.read_text()) if DATA.exists() else {}


_GPU = (("GB300", "GB300"), ("GB200", "GB200"), ("B300", "B300"), ("B200", "B200"), ("H100", "H100"))


# runs.csv model names whose preset prefix is not their upper-cased name: the Nemotron 3 presets are named by family
# and size class (scripts/performance/configs/nemotronh/nemotron_3_workload_base_configs.py, perf_recipes/nemotronh)
PRESET_STEMS = {"Nemotron3-Super": "NEMOTRON_3_SUPER", "Nemotron3-Nano-30B-A3B": "NEMOTRON_3_NANO"}


def _stem(model_name: str) -> str:
    """Megatron-Bridge preset prefix of a model: upper case, non-alphanumerics as '_', no '-Instruct' suffix."""
    if model_name in PRESET_STEMS:
        return PRESET_STEMS[model_name]
    return re.sub(r"[^A-Z0-9]+", "_", re.sub(r"-instruct$", "", model_name, flags=re.I).upper()).strip("_")


def preset_for(release: str, model_name: str, hardware: str, precision: str, tp: int, pp: int, vpp: Optional[int],
               ep: int, mbs: int, gbs: Optional[int] = None) -> Optional[dict]:
    """The release's preset for this model, GPU and precision whose parallel sizes match the row (None if no
    preset, or if matching variants disagree on a flag; vpp None matches any). precision: the row's published
    text. The result has the FLAGS and the preset's virtual_pipeline_model_parallel_size. `gbs`, the row's published
    global batch, picks among variants of the same parallel sizes: a release's V1 and V2 presets often differ only in
    GBS and flags (26.02.01 GPT_OSS_120B_PRETRAIN_CONFIG_GB200_BF16_V1: GBS 512, no EP overlap; _V2: GBS 1280, EP overlap
    and HybridEP), and the table publishes which one ran; variants of another GBS are dropped when one matches."""
    rel = _load().get(release)
    gpu = next((g for key, g in _GPU if key in hardware.upper()), None)
    if rel is None or gpu is None:
        return None
    p = precision.upper()
    prec = "FP8_MX" if ("MXFP8" in p or "FP8-MX" in p) else "FP8_CS" if "FP8" in p else "NVFP4" if "NVFP4" in p else "BF16"
    head = f"{_stem(model_name)}_PRETRAIN_CONFIG_{gpu}_{prec}_"
    named = [(k, v) for k, v in rel["presets"].items() if k.startswith(head)]
    if any(re.search(r"_V\d+$", k) for k, _ in named):  # the numbered variants are the published ones; DEV,
        named = [(k, v) for k, v in named if re.search(r"_V\d+$", k)]  # LARGE_SCALE, FSDP are alternatives
    hits = [v for _, v in named
            if (v.get("tensor_model_parallel_size"), v.get("pipeline_model_parallel_size"),
                 v.get("expert_model_parallel_size"), v.get("micro_batch_size")) == (tp, pp, ep, mbs)
            and (vpp is None or (v.get("virtual_pipeline_model_parallel_size") or 1) == vpp)]
    if gbs is not None and any(v.get("global_batch_size") == gbs for v in hits):
        hits = [v for v in hits if v.get("global_batch_size") == gbs]
    keys = FLAGS + ("virtual_pipeline_model_parallel_size",)
    flags = {tuple((k, json.dumps(h.get(k))) for k in keys) for h in hits}
    return {k: hits[0].get(k) for k in keys} if len(flags) == 1 else None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--extract", metavar="GITDIR", required=True, help="Megatron-Bridge git dir (bare mirror)")
    args = ap.parse_args()
    DATA.write_text(json.dumps(extract(args.extract), separators=(",", ":"), sort_keys=True) + "\n")
    print(f"wrote {DATA}")


if __name__ == "__main__":
    main()
