"""The first round's generators: recipes, model files, hardware profiles, launch scripts, render targets, solves
and sweeps, valid, at the boundary and hostile, each with the shardplan command that reads it.
"""
from __future__ import annotations

import copy
import json
from pathlib import Path

import yaml

from tests.helpers.fuzz.choice import HOSTILE_STRINGS, Case, chance, dump_yaml, hostile_number, pick, special_file

REPO = Path(__file__).resolve().parents[3]
PROFILE_BASE = yaml.safe_load((REPO / "hardware" / "profiles" / "h100-sxm-80gb.yaml").read_text())
SMALL_MODEL = {"num_layers": 4, "hidden_size": 256, "ffn_hidden_size": 1024, "num_attention_heads": 4,
               "num_query_groups": 4, "vocab_size": 1024, "max_position_embeddings": 2048}
HF_BASE = {"model_type": "llama", "hidden_size": 512, "num_attention_heads": 8, "num_hidden_layers": 4,
           "intermediate_size": 1376, "vocab_size": 2048, "num_key_value_heads": 8, "max_position_embeddings": 4096}
BUNDLED = ["Llama-3.1-8B", "Qwen3-30B-A3B", "Mixtral-8x7B-v0.1", "DeepSeek-V3", "gpt-oss-20b", "Llama-2-7b"]
PROFILES = ["h100-sxm-80gb", "b200", "mi300x", "a100-sxm-80gb"]

def model_mapping(c) -> dict:
    """A ModelSpec mapping (small, valid by default) with some fields made hostile."""
    m = dict(SMALL_MODEL)
    if chance(c, 30):
        m.update(num_experts=pick(c, [4, 8, 0, 2**20]), moe_router_topk=pick(c, [1, 2, 9]),
                 moe_ffn_hidden_size=pick(c, [128, 0, 2**30]))
        if chance(c, 30):
            m["first_k_dense_layers"] = hostile_number(c, 1)
    for _ in range(c.int(0, 2)):
        key = pick(c, list(m) + ["kv_channels", "layer_is_moe", "mtp_num_layers", "name", "bogus_field"])
        m[key] = pick(c, HOSTILE_STRINGS) if chance(c, 15) else hostile_number(c, m.get(key, 1))
    return m


def hf_config(c) -> dict:
    cfg = dict(HF_BASE)
    if chance(c, 20):
        cfg = {"model_type": "gpt2", "n_embd": 768, "n_layer": 4, "n_head": hostile_number(c, 12), "vocab_size": 50257}
    if chance(c, 30):
        cfg.update(model_type=pick(c, ["deepseek_v3", "qwen3_moe", "mixtral"]), n_routed_experts=8, num_local_experts=8,
                   num_experts_per_tok=2, moe_intermediate_size=256, first_k_dense_replace=hostile_number(c, 1),
                   moe_layer_freq=hostile_number(c, 1), decoder_sparse_step=hostile_number(c, 1))
    for _ in range(c.int(0, 3)):
        key = pick(c, list(cfg) + ["head_dim", "kv_lora_rank", "q_lora_rank", "mlp_only_layers", "tie_word_embeddings"])
        cfg[key] = hostile_number(c, cfg.get(key, 1))
    return cfg


def profile_mapping(c) -> dict:
    p = copy.deepcopy(PROFILE_BASE)
    for _ in range(c.int(0, 2)):
        key = pick(c, ["hbm_capacity_bytes", "hbm_bandwidth_gb_per_s", "gpus_per_node", "scale_up_domain_size",
                       "scale_up_bandwidth_gb_per_s", "nics_per_gpu", "scale_out_latency_us", "peak_tflops", "calibration",
                       "supports_fp8", "name", "sources", "extra_field"])
        if key == "peak_tflops":
            p["peak_tflops"] = {**p["peak_tflops"], pick(c, ["bf16", "fp8", "fp16"]): hostile_number(c, 989.0)}
        elif key == "calibration":
            p["calibration"] = {**(p.get("calibration") or {}), pick(c, ["gemm_efficiency", "kernel_launch_us",
                                                                         "moe_load_imbalance", "framework_overhead_bytes"]):
                                pick(c, [[], [[20.0, 0.5]], [[20.0, 2.0]], 1e300, -1, None, [[1e300, 1e-300]]])}
        else:
            p[key] = hostile_number(c, p.get(key))
    return p


RECIPE_FIELDS = ["tp", "pp", "vpp", "cp", "ep", "etp", "mbs", "schedule", "sequence_parallel", "recompute", "dp_sharding",
                 "first_stage_layers", "last_stage_layers", "pipeline_layout", "hierarchical_cp_sizes", "cp_comm_type",
                 "cpu_offloading_num_layers", "microbatch_group_size", "num_distributed_optimizer_instances",
                 "make_vocab_size_divisible_by", "moe_dispatcher", "bogus"]


def recipe_mapping(c, model_ref) -> dict:
    recipe = {"tp": pick(c, [1, 2, 4, 8]), "pp": pick(c, [1, 2, 4]), "mbs": pick(c, [1, 2])}
    if chance(c, 30):
        recipe.update(vpp=pick(c, [2, 4]), schedule="interleaved")
    for _ in range(c.int(0, 3)):
        key = pick(c, RECIPE_FIELDS)
        if key in ("pipeline_layout",):
            recipe[key] = pick(c, HOSTILE_STRINGS)
        elif key == "recompute":
            recipe[key] = pick(c, [{"granularity": "full", "method": "uniform", "num_layers": hostile_number(c, 1)},
                                   {"granularity": "selective", "modules": pick(c, [[], ["core_attn"], ["bogus"]])}, "full"])
        elif key == "hierarchical_cp_sizes":
            recipe[key] = pick(c, [[], [2, 1], [1] * 100, [0], None])
        elif key in ("schedule", "dp_sharding", "cp_comm_type", "moe_dispatcher"):
            recipe[key] = pick(c, ["1f1b", "interleaved", "zbv", "megatron_fsdp", "a2a+p2p", "flex", "bogus", 3])
        else:
            recipe[key] = hostile_number(c, 1)
    job = {"seq_length": hostile_number(c, pick(c, [1024, 4096]), 8), "global_batch_size": hostile_number(c, pick(c, [8, 64]), 8)}
    if chance(c, 10):
        job["precision"] = pick(c, ["fp8-tensorwise", "mxfp8", "fp4", "bogus"])
    return {"model": model_ref, "hardware": "h100-sxm-80gb", "nodes": hostile_number(c, 1, 5), "gpus_per_node": hostile_number(c, 8, 5),
            "job": job, "recipe": recipe}


def recipe_case(c) -> Case:
    """`check` a YAML recipe whose model is bundled, inline, or a generated model / HF config file."""
    files = {}
    r = c.int(0, 99)
    if r < 40:
        model_ref = pick(c, BUNDLED + ["x" * 300, "missing.yaml", "", "llama-3.1-8b"])
    elif r < 60:
        model_ref = model_mapping(c)
    elif r < 80:
        files["model.yaml"] = dump_yaml(c, model_mapping(c))
        model_ref = "model.yaml"
    elif r < 95:
        files["config.json"] = json.dumps(hf_config(c)) if chance(c, 90) else "[" * 5000
        model_ref = "config.json"
    else:
        files["model.yaml"] = special_file(c)
        model_ref = "model.yaml"
    data = recipe_mapping(c, model_ref)
    if chance(c, 20):
        files["profile.yaml"] = dump_yaml(c, profile_mapping(c)) if chance(c, 90) else special_file(c)
        data["hardware"] = "{dir}/profile.yaml"
    if chance(c, 10):
        data.pop(pick(c, list(data)))
    files["recipe.yaml"] = dump_yaml(c, data) if chance(c, 95) else special_file(c)
    return Case("recipe", ["check", "{dir}/recipe.yaml", "--json"], files, json_shape="check")


_FLAG_VALUES = {
    "--num-layers": [4, 32, 0, 10**9, "$((9**9))", "abc"], "--hidden-size": [512, 4096, 0, 2**40],
    "--num-attention-heads": [8, 32, 0, 7], "--seq-length": [4096, 0, 2**30], "--max-position-embeddings": [4096, 1],
    "--micro-batch-size": [1, 2, 0], "--global-batch-size": [64, 0, "$((4*16))", 10**12],
    "--tensor-model-parallel-size": [1, 2, 8, 16, 0], "--pipeline-model-parallel-size": [1, 2, 3],
    "--moe-layer-freq": ["1", "([0]*2+[1]*2)", "([0]*65536)*65536", "[1,0]*2"], "--num-experts": [8, 0, 2**20],
    "--pipeline-model-parallel-layout": ["Et*2|t*2L", "(tttt)*1000000000", "", "E|t*4|L"],
    "--cpu-offloading-num-layers": [1, 4, 100], "--ffn-hidden-size": [1376, 0], "--vocab-size": [2048, 0],
}
_BASH_NOISE = [
    'X=$(echo --num-layers 400)', 'Y=`id`', "cat <<EOF\ntorchrun pretrain_gpt.py --num-layers 999\nEOF",
    'Z=$(( ((((((((1)))))))) ))', 'A=${B:-${C:-${D:-1}}}', 'if [ -n "$X" ]; then echo; fi', 'echo "}" $(echo "}")',
    '# comment with ` and $( unclosed', 'ARR=(a b "c d")', 'export CUDA_DEVICE_MAX_CONNECTIONS=1',
    'Q=$((' + "-" * 200 + '1))', 'W=$((2**62*4))', "f() { echo hi; }", "source ./env.sh", "set -euo pipefail",
]


def script_case(c) -> Case:
    """`check` a generated Megatron launch script or argument file, with bash noise around the launch line."""
    flags = {"--num-layers": 4, "--hidden-size": 512, "--num-attention-heads": 8, "--seq-length": 1024,
             "--max-position-embeddings": 1024, "--micro-batch-size": 1, "--global-batch-size": 64,
             "--ffn-hidden-size": 1376, "--vocab-size": 2048, "--tensor-model-parallel-size": 1, "--bf16": ""}
    for _ in range(c.int(0, 3)):
        flag = pick(c, list(_FLAG_VALUES))
        flags[flag] = pick(c, _FLAG_VALUES[flag])
    parts = [k if v == "" and k == "--bf16" else f"{k} {json.dumps(v) if isinstance(v, str) and (' ' in v or not v) else v}"
             for k, v in flags.items()]
    if chance(c, 20):
        parts.insert(c.int(0, len(parts)), pick(c, ["--swiglu", "--bf16", "--fp8-format hybrid", "--use-mcore-models",
                                                     "--tensorboard-dir $(pick_dir --num-layers 400)", "--foo `bar baz`"]))
    lines = ["#!/bin/bash"] + [pick(c, _BASH_NOISE) for _ in range(c.int(0, 4))]
    if chance(c, 50):
        lines.append("torchrun --nproc_per_node 8 --nnodes 1 pretrain_gpt.py " + " \\\n    ".join(parts))
    else:
        lines.append("ARGS=(\n    " + "\n    ".join(parts) + "\n)\ntorchrun --nproc_per_node 8 pretrain_gpt.py ${ARGS[@]}")
    lines += [pick(c, _BASH_NOISE) for _ in range(c.int(0, 2))]
    text = "\n".join(lines) + "\n"
    if chance(c, 5):
        text = text * 2000  # a large script near the 1 MiB limit or past it
    name = pick(c, ["train.sh", "args.txt"])
    files = {name: text if chance(c, 95) else special_file(c)}
    return Case("script", ["check", "{dir}/" + name, "--hardware", pick(c, PROFILES + ["{dir}/" + name]), "--nodes",
                           str(pick(c, [1, 1, 1, 2, 0])), "--gpus-per-node", str(pick(c, [8, 8, 8, 6, 1024])), "--json"],
                files, json_shape="check")


def render_case(c) -> Case:
    """`render` a recipe to an output that may be a FIFO, a folder, a link to a FIFO, or an existing file."""
    files = {"recipe.yaml": yaml.safe_dump(recipe_mapping(c, pick(c, BUNDLED[:3])))}
    target = pick(c, ["out.sh", "fifo", "dir", "link", "existing.sh", "missing/out.sh"])
    keep = []
    if target == "fifo":
        files["fifo"], keep = "FIFO", ["fifo"]
    elif target == "dir":
        files["dir"], keep = "DIR", ["dir"]
    elif target == "link":
        files["fifo"], files["link"], keep = "FIFO", ("SYMLINK", "fifo"), ["fifo", "link"]
    elif target == "existing.sh":
        files["existing.sh"] = "#!/bin/bash\necho keep\n"
    argv = ["render", "{dir}/recipe.yaml", "--format", pick(c, ["torchrun", "slurm", "bogus"]), "-o", "{dir}/" + target]
    if chance(c, 50):
        argv.append("--force")
    return Case("render", argv, files, keep=keep)


def model_file_case(c) -> Case:
    """`solve` a small space of a generated model YAML / HF config on one node, with hostile numeric options."""
    if chance(c, 50):
        files = {"m.yaml": dump_yaml(c, model_mapping(c))}
        ref = "{dir}/m.yaml"
    else:
        files = {"config.json": json.dumps(hf_config(c))}
        ref = "{dir}/config.json"
    argv = ["solve", "--model", ref, "--hardware", "h100-sxm-80gb", "--nodes", "1", "--gpus-per-node", "8", "--max-time", "30",
            "--seq-length", str(pick(c, [512, 1024, 0, 2**40])), "--global-batch-size", str(pick(c, [8, 16, 0])),
            "--top", str(pick(c, [1, 3, 0])), "--proposer", "none", "--json"]
    for _ in range(c.int(0, 2)):
        opt = pick(c, ["--tp", "--pp", "--vpp", "--mbs", "--time-limit", "--max-memory-fraction", "--cp", "--max-time"])
        argv += [opt, str(pick(c, ["1", "2", "1..4", "1..100000000", "0", "nan", "inf", "-1", "1e30", "4..2", "1..1" + "0" * 30]))]
    return Case("solve", argv, files, json_shape="solve")


def profile_case(c) -> Case:
    """`check` the bundled example recipe on a generated hardware profile."""
    files = {"p.yaml": dump_yaml(c, profile_mapping(c)) if chance(c, 95) else special_file(c),
             "recipe.yaml": yaml.safe_dump(recipe_mapping(c, "Llama-3.1-8B")).replace(
                 "hardware: h100-sxm-80gb", "hardware: '{dir}/p.yaml'")}
    return Case("profile", ["check", "{dir}/recipe.yaml", "--json"], files, json_shape="check")


def sweep_case(c) -> Case:
    """`sweep` over one or two small node counts with hostile budgets, node patterns and report targets."""
    argv = ["sweep", "--model", pick(c, ["Llama-3.1-8B", "Qwen3-8B", "x" * 300]), "--hardware",
            pick(c, ["h100-sxm-80gb", "b200,mi300x", "", "{dir}/fifo"]), "--nodes",
            pick(c, ["1", "1..2", "0..1", "1..100000000", "1..1000000+1", "2,1", "99999999999999999999", "a..b"]),
            "--seq-length", str(pick(c, [2048, 4096, 0])), "--global-batch-size", str(pick(c, [16, 64, 0])), "--json"]
    files, keep = {}, []
    if chance(c, 40):
        argv += ["--train-tokens", str(pick(c, ["1e12", "nan", "inf", "0", "-1", "1e300"]))]
        if chance(c, 50):
            argv += ["--usd-per-gpu-hour", str(pick(c, ["2.5", "nan", "inf", "-1"]))]
    if chance(c, 30):
        files["fifo"], keep = "FIFO", ["fifo"]
        argv += ["--report", pick(c, ["{dir}/fifo", "{dir}/out.html", "{dir}/missing/out.html"])]
    return Case("sweep", argv, files, keep=keep)
