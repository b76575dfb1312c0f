"""`check` on a launch script prices the CUDA graphs the script asks for, as the fitted published rows price their
preset's (bench/runs.py): before, `--cuda-graph-impl` was "not understood" and `--cuda-graph-scope` "no effect", so a
script that captures its MoE layers was projected as if it ran eager, with the host-issue floor and dispatcher sync
that the capture removes."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from constraints.megatron.run_flags import cuda_graph_request
from measure.kernels.cuda_graphs import graph_scope

# Qwen3-30B-A3B (Qwen/Qwen3-30B-A3B config.json): 48 layers, hidden 2048, 32 heads, 4 KV heads of 128, 128 experts
# top-8 of width 768; EP 8 at MBS 1, where small per-rank kernels leave the GPU waiting on the host
SCRIPT = """torchrun --nproc-per-node 8 pretrain_gpt.py --tensor-model-parallel-size 1 --expert-model-parallel-size 8 \\
  --num-layers 48 --hidden-size 2048 --ffn-hidden-size 6144 --num-attention-heads 32 --group-query-attention \\
  --num-query-groups 4 --kv-channels 128 --num-experts 128 --moe-router-topk 8 --moe-ffn-hidden-size 768 \\
  --moe-grouped-gemm --moe-token-dispatcher-type alltoall --qk-layernorm --seq-length 4096 --max-position-embeddings 40960 \\
  --micro-batch-size 1 --global-batch-size 512 --bf16 --recompute-activations --swiglu --normalization RMSNorm \\
  --position-embedding-type rope --untie-embeddings-and-output-weights --disable-bias-linear --use-distributed-optimizer \\
  --vocab-size 151936 {graphs}
"""


@pytest.mark.parametrize("raw, impl, modules", [
    ({}, None, []),
    ({"--cuda-graph-impl": "none", "--cuda-graph-scope": ["attn"]}, None, ["attn"]),
    ({"--enable-cuda-graph": True}, "local", []),  # deprecated spellings (validate_args)
    ({"--external-cuda-graph": True, "--cuda-graph-scope": ["attn", "moe_router"]}, "transformer_engine", ["attn", "moe_router"]),
    ({"--cuda-graph-impl": "transformer_engine", "--cuda-graph-modules": ["mamba"]}, "transformer_engine", ["mamba"]),
])
def test_the_flags_read_as_megatron_reads_them(raw, impl, modules):
    assert cuda_graph_request(raw) == (impl, modules)


def test_what_the_request_captures():
    assert graph_scope(*cuda_graph_request({"--cuda-graph-impl": "none", "--cuda-graph-scope": ["attn"]})) == frozenset()
    assert graph_scope(*cuda_graph_request({"--enable-cuda-graph": True})) == {"full"}  # whole layers by default
    assert graph_scope(*cuda_graph_request({"--cuda-graph-impl": "local", "--cuda-graph-scope": ["full_iteration"]})) \
        == {"full_iteration"}  # the deprecated module means --cuda-graph-impl full_iteration


def check_json(tmp_path, graphs: str) -> dict:
    path = tmp_path / f"train{abs(hash(graphs))}.sh"
    path.write_text(SCRIPT.format(graphs=graphs))
    out = subprocess.run([sys.executable, "-m", "shardplan", "check", str(path), "--hardware", "h100-sxm-80gb", "--nodes",
                          "1", "--gpus-per-node", "8", "--json"], capture_output=True, text=True,
                         env={"CUDA_DEVICE_MAX_CONNECTIONS": "1", "PATH": ""})
    assert out.returncode in (0, 1), out.stderr
    return json.loads(out.stdout)


def test_a_script_that_captures_is_projected_faster_and_says_so(tmp_path):
    eager = check_json(tmp_path, "")
    partial = check_json(tmp_path, "--cuda-graph-impl transformer_engine --cuda-graph-scope attn moe_router moe_preprocess")
    whole = check_json(tmp_path, "--cuda-graph-impl full_iteration")
    assert eager["cuda_graph_scope"] == [] and whole["cuda_graph_scope"] == ["full_iteration"]
    assert partial["cuda_graph_scope"] == ["attn", "moe_preprocess", "moe_router"]
    speed = [r["projection"]["tokens_per_s_per_gpu"] for r in (eager, partial, whole)]
    assert speed[0] < speed[1] < speed[2], speed
    for r in (partial, whole):
        assert not [f for f in r["unknown_flags"] + r["ignored_flags"] if "cuda-graph" in f]


def test_the_op_fuser_on_a_moe_script_is_the_fused_grouped_mlp_and_on_a_dense_one_is_not_understood(tmp_path):
    """gpt-oss's experts: `--use-transformer-engine-op-fuser` takes TEGroupedMLP's fused implementation, which drops the
    eager clamp, bias passes and host sync (measure/kernels/layer_ops.py), as Megatron-Bridge's cutedsl_fused_grouped_mlp
    presets are priced; a dense model's op-fuser MLP is not modelled, so there the flag stays "not understood"."""
    from constraints.case import Case
    from constraints.models.load import load_model
    from constraints.spec import JobSpec, Placement, Recipe
    from templates.render import render_script

    def run(model: str, recipe: Recipe, extra: str) -> dict:
        case = Case(model=load_model(model), job=JobSpec(seq_length=4096, global_batch_size=128), recipe=recipe,
                    placement=Placement(hardware="b200", num_nodes=1, gpus_per_node=8))
        text = render_script(case, "torchrun").replace("PRECISION_ARGS=(\n", f"PRECISION_ARGS=(\n    {extra}\n", 1)
        assert extra in text
        path = tmp_path / f"{model}{len(extra)}.sh"
        path.write_text(text)
        out = subprocess.run([sys.executable, "-m", "shardplan", "check", str(path), "--hardware", "b200", "--json"],
                             capture_output=True, text=True, env={"PATH": ""})
        assert out.returncode in (0, 1), out.stderr
        return json.loads(out.stdout)

    eager = run("gpt-oss-120b", Recipe(tp=1, ep=8), "--bf16")
    fused = run("gpt-oss-120b", Recipe(tp=1, ep=8), "--use-transformer-engine-op-fuser")
    assert not eager["fused_grouped_mlp"] and fused["fused_grouped_mlp"]
    assert "--use-transformer-engine-op-fuser" not in fused["unknown_flags"]
    assert fused["projection"]["tokens_per_s_per_gpu"] > eager["projection"]["tokens_per_s_per_gpu"]
    dense = run("Llama-3.1-8B", Recipe(tp=1), "--use-transformer-engine-op-fuser")
    assert not dense["fused_grouped_mlp"] and "--use-transformer-engine-op-fuser" in dense["unknown_flags"]
