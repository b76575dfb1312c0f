"""fp32 training (a Megatron script with neither --bf16 nor --fp16) in exact bytes: 4-byte weights, 4-byte gradients,
the optimizer's moments only (the fp32 params are what it steps: no master copy; distrib_optimizer.py fp32 branch),
4-byte activations, and core attention unfused (Transformer Engine disables flash / fused attention for fp32 inputs)."""
import pytest

from constraints.memory import activations as act
from constraints.memory.first_step import moment_bytes
from constraints.memory.per_rank import memory_report, rank_params
from constraints.models.load import load_model
from constraints.spec import JobSpec, Recipe
from constraints.stages import rank_chunks

H100 = 85_520_809_984
LLAMA8B = load_model("Llama-3.1-8B")  # meta-llama/Llama-3.1-8B: 8,030,261,248 parameters (HF model card "8B")


def report(precision, **recipe):
    job = JobSpec(seq_length=4096, global_batch_size=64, precision=precision)
    r = Recipe(**{"tp": 2, "pp": 1, "mbs": 1, **recipe})
    return memory_report(LLAMA8B, job, r, 8, H100), job, r


def test_static_state_is_4_4_and_8_bytes_per_parameter():
    fp32, job, r = report("fp32")
    dense, expert, _ = rank_params(LLAMA8B, r, rank_chunks(LLAMA8B, r)[0])
    per_rank = dense + expert
    dp = 4  # 8 GPUs / TP 2
    assert fp32.terms["weights"] == 4 * per_rank and fp32.terms["gradients"] == 4 * per_rank
    assert fp32.terms["optimizer_state"] == 8 * -(-dense // dp)  # Adam m, v over the distributed optimizer's shards
    bf16, _, _ = report("bf16")
    assert bf16.terms["weights"] == 2 * per_rank and bf16.terms["optimizer_state"] == 12 * -(-dense // dp)
    assert moment_bytes(fp32.terms, job) == fp32.terms["optimizer_state"]  # all of it is moments


def test_muon_keeps_one_fp32_momentum():
    job = JobSpec(seq_length=4096, global_batch_size=64, precision="fp32", optimizer="muon")
    r = Recipe(tp=2, pp=1, mbs=1, dp_sharding="none")
    mem = memory_report(LLAMA8B, job, r, 8, H100)
    assert mem.terms["optimizer_state"] == mem.terms["weights"]  # 4 B each per parameter


def test_activations_are_4_bytes_and_attention_keeps_its_fp32_scores():
    bf16_job = JobSpec(seq_length=4096, global_batch_size=64, precision="bf16")
    fp32_job = JobSpec(seq_length=4096, global_batch_size=64, precision="fp32")
    r = Recipe(tp=2, pp=1, mbs=1)
    b = act.layer_terms(LLAMA8B, act.shape_of(bf16_job, r), False)
    f = act.layer_terms(LLAMA8B, act.shape_of(fp32_job, r), False)
    for key in ("ln1_input", "qkv_input", "q_k", "v", "attn_output", "ln2_input", "fc1_input", "fc1_output", "act_output"):
        assert f[key] == 2 * b[key], key
    heads = 32 // 2  # 32 query heads over TP 2
    assert "softmax_stats" not in f and "softmax_stats" in b  # no flash LSE: TE's unfused attention
    assert f["attn_softmax_output"] == 4 * heads * 4096 * 4096  # fp32 probabilities, b = 1
    assert f["attn_probs_bf16"] == 0  # no half-precision copy in fp32 training
    assert f["attn_kv_expanded"] == 2 * 4 * 4096 * (heads - 8 // 2) * 128  # K and V expanded from 4 groups to 16 heads


def test_the_loss_works_in_place_on_fp32_logits():
    fp32_job = JobSpec(seq_length=4096, global_batch_size=64, precision="fp32")
    bf16_job = JobSpec(seq_length=4096, global_batch_size=64, precision="bf16")
    r = Recipe(tp=1, pp=1, mbs=1)
    v = 128256
    fp32_out = act.output_bytes(LLAMA8B, act.shape_of(fp32_job, r), v)
    bf16_out = act.output_bytes(LLAMA8B, act.shape_of(bf16_job, r), v)
    h = 4096
    assert fp32_out == 4 * 4096 * (2 * h + v)  # norm input, GEMM input, fp32 logits; no second buffer
    assert bf16_out == 2 * 4096 * (2 * h + v) + 4 * 4096 * v


@pytest.mark.parametrize("precision", ["bf16", "fp32"])
def test_full_recompute_keeps_layer_inputs_in_the_training_dtype(precision):
    mem, job, r = report(precision, recompute={"granularity": "full", "method": "uniform", "num_layers": 1})
    sh = act.shape_of(job, r)
    assert act.layer_input_bytes(LLAMA8B, sh, r) == (4 if precision == "fp32" else 2) * 4096 * 4096  # SP off: whole over TP
