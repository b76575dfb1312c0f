"""Second-round reader inputs (issue 33): stack configs (Primus, Megatron-Bridge, Megatron-LM --yaml-cfg) with
environment expansions, deep nesting and fanned-out `extends` trees; HF configs whose layer count or per-layer lists
are huge; and launch scripts that build big values with few statements.

Why these: the first round bounded YAML, recipes and statements, yet a 734-byte `${VAR:default}` file took 3.1 GiB,
a Primus `extends` tree of 3 x 14 files hung, `num_hidden_layers: 1e9` built per-layer lists before the layer check,
and a 1.2 KB script that doubles a string never finished. Each generator mixes valid files with these attacks, so the
judge also sees the readers still answer real inputs.
"""
from __future__ import annotations

import json
from pathlib import Path

import yaml

from tests.helpers.fuzz.choice import Case, chance, pick

REPO = Path(__file__).resolve().parents[3]
STACKS = REPO / "tests" / "data" / "stack_configs"
HF_CONFIGS = sorted((REPO / "constraints" / "models" / "hf_configs").glob("*.json"))
CLUSTER = ["--hardware", "h100-sxm-80gb", "--nodes", "1", "--gpus-per-node", "8", "--json"]


def env_expansion(c) -> str:
    """A `${VAR:default}` value: plain, nested, repeated, or a default that names itself."""
    depth = pick(c, [1, 2, 40, 3000])
    r = c.int(0, 4)
    if r == 0:
        return "${PRIMUS_TP:2}"
    if r == 1:
        return "${A:" * depth + "2" + "}" * depth
    if r == 2:
        return "${A:${A}${A}${A}${A}}" * pick(c, [1, 8, 64])
    if r == 3:
        return "$" + "{" * depth
    return "${" + "X" * pick(c, [1, 300, 70_000]) + ":1}"


def nested_mapping(depth: int) -> str:
    return "deep: " + "{a: " * depth + "1" + "}" * depth + "\n"


def primus_tree(c) -> dict:
    """A Primus experiment whose model file `extends` a tree: a chain, a fan-out (width x depth files, each naming
    the same children), a cycle, or a missing file."""
    shape = pick(c, ["chain", "fan", "fan", "cycle", "missing", "self"])
    width, depth = pick(c, [(1, 3), (3, 14), (4, 12), (64, 4), (2, 40)])
    files = {}
    base = (STACKS / "test_llama_base.yaml").read_text()
    for level in range(depth):
        children = [f"m{level + 1}_{i}.yaml" for i in range(width)] if level + 1 < depth else []
        if shape == "cycle" and level + 1 == depth:
            children = ["m0_0.yaml"]
        if shape == "missing" and level + 1 == depth:
            children = ["does-not-exist.yaml"]
        if shape == "self":
            children = [f"m{level}_0.yaml"]
        for i in range(width if level else 1):
            body = ("extends:\n" + "".join(f"  - {child}\n" for child in children)) if children else base
            files[f"m{level}_{i}.yaml"] = body + f"num_layers: {4 + level}\n"
    model = (STACKS / "test_llama_8b.yaml").read_text().replace("- test_llama_base.yaml", "- m0_0.yaml")
    files["model.yaml"] = model
    return files


def stack_config_case(c) -> Case:
    """`check` a Primus, Bridge or --yaml-cfg file with hostile expansions, nesting or extends trees, on one node."""
    kind = pick(c, ["primus", "bridge", "yaml-cfg", "bridge-overrides"])
    files: dict = {}
    env: dict = {}
    if kind == "primus":
        text = (STACKS / "primus-llama8b-legal.yaml").read_text()
        files["test_llama_8b.yaml"] = (STACKS / "test_llama_8b.yaml").read_text()
        files["test_llama_base.yaml"] = (STACKS / "test_llama_base.yaml").read_text()
        if chance(c, 40):
            files.update(primus_tree(c))
            text = text.replace("model: test_llama_8b.yaml", "model: model.yaml")
        name = "exp.yaml"
    elif kind == "bridge":
        text, name = (STACKS / "bridge-llama8b-legal.yaml").read_text(), "bridge.yaml"
    elif kind == "yaml-cfg":
        text, name = (STACKS / "yaml-cfg-gpt-legal.yaml").read_text(), "cfg.yaml"
    else:
        text, name = (STACKS / "bridge-overrides-legal.txt").read_text(), "overrides.txt"
    for _ in range(c.int(0, 3)):
        attack = c.int(0, 5)
        if attack == 0:
            text = text.replace("tensor_model_parallel_size: 2", "tensor_model_parallel_size: " + json.dumps(env_expansion(c)), 1)
            text = text.replace("tensor_model_parallel_size=1", "tensor_model_parallel_size=" + env_expansion(c), 1)
        elif attack == 1:
            env[pick(c, ["A", "PRIMUS_TP", "X"])] = pick(c, ["4", "${A}", "${A}${A}", "x" * 100_000, "\x1b]0;t\x07", "$(id)"])
        elif attack == 2:
            text = nested_mapping(pick(c, [31, 33, 500, 3000])) + text
        elif attack == 3:
            text += "bomb_key: " + json.dumps("${A:" + "${A:" * 20 + "1" + "}" * 21) * 1 + "\n"
        elif attack == 4:
            text = 'a0: &a0 ["x","x","x","x","x","x","x","x","x"]\n' + "".join(
                f"a{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * 9) + "]\n" for i in range(1, 8)) + text
        else:
            text += "\n" + "x" * pick(c, [10, 70_000]) + ": 1\n"
    files[name] = text
    return Case("stack", ["check", "{dir}/" + name, *CLUSTER], files, json_shape="check", env=env)


HF_LAYER_KEYS = ["layer_types", "hybrid_override_pattern", "mlp_only_layers", "moe_layer_freq", "no_rope_layers",
                 "interleave_moe_layer_step", "first_k_dense_replace", "decoder_sparse_step", "sliding_window_pattern"]


def hf_layers_case(c) -> Case:
    """`check` a recipe whose model is a bundled HF config with a huge layer count or a huge per-layer list."""
    cfg = json.loads(pick(c, HF_CONFIGS).read_text())
    for _ in range(c.int(1, 3)):
        key = pick(c, ["num_hidden_layers"] * 3 + HF_LAYER_KEYS)
        value = pick(c, [10**9, 1e9, 2**31, 2**63, "1e9", 10**400 if key != "num_hidden_layers" else 10**9,
                         ["full_attention"] * 70_000, [1] * 70_000, "M-" * 500_000, 0, -1])
        cfg[key] = value
    recipe = {"model": "config.json", "hardware": "h100-sxm-80gb", "nodes": 1, "gpus_per_node": 8,
              "job": {"seq_length": 4096, "global_batch_size": 64}, "recipe": {"tp": 8, "pp": 1, "mbs": 1}}
    files = {"config.json": json.dumps(cfg), "recipe.yaml": yaml.safe_dump(recipe)}
    return Case("hf_layers", ["check", "{dir}/recipe.yaml", "--json"], files, json_shape="check")


# Scripts that build large values, loop long or source themselves: few statements, unbounded bytes or time.
BASH_BUILDERS = [
    'X=ab; for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30; do X="$X$X"; done',
    'X=ab; for i in $(seq 1 40); do X=$X$X; done',
    'X=a; while true; do X="$X$X"; done',
    "for ((i=0; i<100000000; i++)); do :; done",
    "while :; do :; done",
    "until false; do Y=1; done",
    "source ./big.sh",
    'for i in {1..4000}; do source ./big.sh; done',
    "source ./self.sh",
    'A=(); for i in {1..100000000}; do A+=($i); done',
    'ARR=({1..9}{1..9}{1..9}{1..9}{1..9}{1..9}{1..9}{1..9}{1..9})',
    'X=$(printf "%0100000000d" 0)',
    'f() { f; }; f',
    'X=${X:-${X:-${X:-${X:-1}}}}',
    'for i in 1 2; do if [ "$i" = 1 ]; then TP=2; fi; done',
    'case "$1" in a) TP=1 ;& b) TP=2 ;; esac',
]


def bash_budget_case(c) -> Case:
    """`check` a launch script with one or two value- or loop-building lines before the launch line."""
    lines = ["#!/bin/bash", "TP=1"] + [pick(c, BASH_BUILDERS) for _ in range(c.int(1, 2))]
    lines.append("torchrun --nproc_per_node 8 pretrain_gpt.py --num-layers 4 --hidden-size 512 --num-attention-heads 8 "
                 "--seq-length 1024 --max-position-embeddings 1024 --micro-batch-size 1 --global-batch-size 64 "
                 "--ffn-hidden-size 1376 --vocab-size 2048 --tensor-model-parallel-size $TP --bf16")
    files = {"train.sh": "\n".join(lines) + "\n", "big.sh": "Y=" + "y" * pick(c, [10, 1_000_000]) + "\n",
             "self.sh": "source ./self.sh\n"}
    argv = ["check", "{dir}/train.sh", *CLUSTER]
    return Case("bash_budget", argv, files, json_shape="check")
