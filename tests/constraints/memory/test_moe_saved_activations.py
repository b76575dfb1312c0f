"""What a Megatron + Transformer Engine MoE / QK-norm layer really keeps for backward, against the source.

- Routed experts: Megatron applies the routing probabilities inside the expert activation (experts.py TEGroupedMLP,
  weighted_bias_swiglu_impl) and the combine unpermutes without probabilities, so the experts' fc2 output is not
  saved: the routed side keeps fc1 input (tokens x topk x h), fc1 output (x 2 f, SwiGLU) and fc1 activation (x f).
- Shared experts in bf16 read the very tensor the router saved (the pre-MLP norm output): counted once. At FP8 TE
  saves a quantised copy (1 B per element).
- QK layernorm (Qwen3): the per-head q/k RMSNorm saves its bf16 input and fp32 rstd.
Dimensions are the published HF configs (Qwen3-30B-A3B, Moonlight-16B-A3B, Qwen3-8B)."""
from constraints.memory import activations as act
from constraints.models.load import load_model
from constraints.spec import JobSpec, Precision, Recipe

SEQ = 4096


def _terms(model_name: str, precision: Precision = Precision.bf16, **recipe):
    model = load_model(model_name)
    sh = act.shape_of(JobSpec(seq_length=SEQ, global_batch_size=8, precision=precision), Recipe(**recipe))
    return model, act.layer_terms(model, sh, True)


def test_routed_experts_keep_fc1_input_fc1_output_and_activation_only():
    model, terms = _terms("Qwen3-30B-A3B", ep=16)  # h 2048, top-8 of 128, moe_intermediate_size 768
    routed = SEQ * 8
    assert "expert_output" not in terms
    assert terms["expert_fc1_input"] == 2 * routed * 2048
    assert terms["expert_fc1_output"] == 2 * routed * 2 * 768
    assert terms["expert_act_output"] == 2 * routed * 768
    moe_side = sum(v for k, v in terms.items() if k.startswith("expert_"))
    assert moe_side == 2 * routed * (2048 + 3 * 768) == 285_212_672


def test_shared_expert_input_is_the_router_input_in_bf16_only():
    _, bf16 = _terms("Moonlight-16B-A3B", tp=2, sequence_parallel=True, ep=8, etp=1)  # 2 shared experts of 1408
    assert bf16["router_input"] == 2 * (SEQ // 2) * 2048 and bf16["shared_fc1_input"] == 0
    assert bf16["shared_fc1_output"] == 2 * SEQ * 2 * 2816 // 2
    _, fp8 = _terms("Moonlight-16B-A3B", Precision.fp8_tensorwise, tp=2, sequence_parallel=True, ep=8, etp=1)
    assert fp8["shared_fc1_input"] == (SEQ // 2) * 2048  # the FP8 copy TE saves, 1 B per element


def test_qk_layernorm_saves_its_input_and_rstd_per_head():
    model = load_model("Qwen3-8B")  # 32 query heads, 8 KV groups, head dim 128, qk_layernorm
    assert model.qk_layernorm
    sh = act.shape_of(JobSpec(seq_length=SEQ, global_batch_size=8), Recipe(tp=2, sequence_parallel=True))
    terms = act.layer_terms(model, sh, False)
    heads = 32 // 2 + 8 // 2
    assert terms["qk_norm_input"] == 2 * SEQ * heads * 128 + 4 * SEQ * heads
    plain = act.layer_terms(model.model_copy(update={"qk_layernorm": False}), sh, False)
    assert sum(terms.values()) - sum(plain.values()) == terms["qk_norm_input"]
