"""The loss holds an fp32 copy of the logits, fused or not (constraints/memory/activations.py output_bytes): Megatron's
cross entropy casts the vocab-parallel logits to fp32 and saves that buffer while the bf16 logits are alive."""
from constraints.memory import activations as act
from constraints.memory.per_rank import memory_report
from constraints.models.load import load_model
from constraints.models.params import padded_vocab_size
from constraints.spec import JobSpec, Recipe
from hardware.profile import load_profile


def test_qwen3_output_layer_at_the_loss():
    model = load_model("Qwen3-30B-A3B")  # hidden 2048, vocab 151936 (a multiple of 128: no padding at TP 1)
    sh = act.shape_of(JobSpec(seq_length=4096, global_batch_size=8), Recipe(ep=16))
    vocab = padded_vocab_size(model, 1, 128)
    assert vocab == 151_936
    assert act.output_bytes(model, sh, vocab) == 2 * (2 * 4096 * 2048) + 6 * 4096 * 151_936 == 3_767_533_568


def test_loss_fusion_changes_time_not_memory():
    model, prof = load_model("Llama-3.1-8B"), load_profile("h100-sxm-80gb")
    job = JobSpec(seq_length=8192, global_batch_size=64)
    fused = memory_report(model, job, Recipe(tp=2, sequence_parallel=True), 8, prof.hbm_capacity_bytes)
    plain = memory_report(model, job, Recipe(tp=2, sequence_parallel=True, cross_entropy_loss_fusion=False), 8,
                          prof.hbm_capacity_bytes)
    assert fused.peak_bytes == plain.peak_bytes
    v_local = padded_vocab_size(model, 2, 128) // 2
    assert fused.terms["output_activations"] >= 6 * 8192 * v_local
