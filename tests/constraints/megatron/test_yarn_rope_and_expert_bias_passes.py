"""Two eager PyTorch paths Megatron-LM takes for gpt-oss and the projection prices (measure/kernels/layer_ops.py): RoPE with
YaRN's concentration factor (TE's fused RoPE cannot apply it) and the experts' output bias (TEGroupedMLP._apply_bias)."""
from __future__ import annotations

import math

import pytest

from constraints.models.hf_reading import yarn_rope
from constraints.models.load import load_model
from constraints.spec import JobSpec, Precision, Recipe
from measure.kernels.common import Phase
from measure.kernels.layer_ops import attention_ops, expert_bias_ops, moe_ops, tokens_per_local_expert, unfused_rope_ops


def test_yarn_concentration_factor_follows_megatron():
    # gpt-oss-120b config.json rope_scaling: yarn, factor 32, no mscale -> 0.1 ln 32 + 1 (Megatron _yarn_get_mscale)
    assert load_model("gpt-oss-120b").rope_mscale == pytest.approx(0.1 * math.log(32) + 1)
    assert load_model("gpt-oss-120b").rope_mscale == pytest.approx(1.3466, abs=1e-4)
    # DeepSeek-V3: yarn factor 40 with mscale = mscale_all_dim = 1.0 -> ratio 1, TE's fused RoPE runs
    assert load_model("DeepSeek-V3").rope_mscale == 1.0
    assert yarn_rope({"rope_type": "yarn", "factor": 40, "mscale": 0.707, "mscale_all_dim": 1.0}).concentration_factor == \
        pytest.approx((0.1 * 0.707 * math.log(40) + 1) / (0.1 * math.log(40) + 1))
    # one mscale without the other: Megatron-Bridge passes None for both -> 0.1 ln f + 1, stored as the CLI's (1, 0)
    assert yarn_rope({"rope_type": "yarn", "factor": 32, "mscale": 0.5}).concentration_factor == pytest.approx(1.3466, abs=1e-4)
    # mscale_all_dim 0 is a value, not a missing one (Megatron-LM's --mscale-all-dim default)
    assert yarn_rope({"rope_type": "yarn", "factor": 32, "mscale": 2.0, "mscale_all_dim": 0}).concentration_factor == \
        pytest.approx(0.2 * math.log(32) + 1)
    assert load_model("Llama-3.1-8B").rope_mscale == 1.0


JOB = JobSpec(seq_length=4096, global_batch_size=1280, precision=Precision.bf16)
RECIPE = Recipe(tp=1, pp=1, ep=64, mbs=4)


def test_unfused_rope_moves_eleven_passes_of_q_and_k_each_way():
    oss = load_model("gpt-oss-120b")
    ops = unfused_rope_ops(oss, 4 * 4096, 64, 8, 64)
    # 16,384 tokens x (64 query + 8 kv heads) x head dim 64, bf16, 6 reads + 5 writes forward, as many backward
    fwd = sum(o.bytes_moved for o in ops if o.phase == Phase.fwd)
    assert fwd == 11 * 16384 * 72 * 64 * 2 == 1_660_944_384
    assert sum(o.bytes_moved for o in ops if o.phase == Phase.bwd_dgrad) == fwd
    assert len([o for o in ops if o.phase == Phase.fwd]) == 2  # Q and K: two calls, two host ops
    assert ops[0] in attention_ops(oss, JOB, RECIPE)
    assert unfused_rope_ops(load_model("Llama-3.1-8B"), 16384, 32, 8, 128) == []


def test_expert_output_bias_is_three_reads_and_three_writes_of_the_routed_tokens():
    oss = load_model("gpt-oss-120b")
    routed = (128 // 64) * tokens_per_local_expert(oss, JOB, RECIPE)
    assert routed == 4 * 4096 * 4  # every token to its top 4 experts under forced balance
    ops = expert_bias_ops(oss, routed, oss.hidden_size)
    assert sum(o.bytes_moved for o in ops if o.phase == Phase.fwd) == 6 * 65536 * 2880 * 2
    assert ops[0] in moe_ops(oss, JOB, RECIPE)
    qwen = load_model("Qwen3-30B-A3B")
    assert expert_bias_ops(qwen, routed, qwen.hidden_size) == []


def test_a_script_or_bridge_config_that_runs_yarn_is_priced_as_yarn():
    from constraints.megatron.argv_to_specs import parse_megatron_args
    from constraints.stacks.keys import flags_for_core_field
    base = ["--num-layers", "2", "--hidden-size", "2880", "--num-attention-heads", "64", "--group-query-attention",
            "--num-query-groups", "8", "--kv-channels", "64", "--max-position-embeddings", "131072", "--vocab-size", "201088",
            "--seq-length", "4096", "--micro-batch-size", "1", "--global-batch-size", "8", "--bf16"]
    # Megatron-LM's defaults for the rest (argument_utils._apply_yarn_config_from_args): --mscale 1, --mscale-all-dim 0
    yarn = parse_megatron_args(base + ["--position-embedding-type", "yarn", "--rotary-scaling-factor", "32"]).model
    assert yarn.rope_mscale == pytest.approx(0.1 * math.log(32) + 1)
    assert parse_megatron_args(base + ["--position-embedding-type", "rope"]).model.rope_mscale == 1.0
    # Megatron-Bridge GPTModelProvider spells them yarn_*: mapped onto Megatron-LM's flags
    assert flags_for_core_field("yarn_rotary_scaling_factor", 32.0, "model.yarn_rotary_scaling_factor", True) == \
        ["--rotary-scaling-factor", "32.0"]
    assert flags_for_core_field("yarn_mscale_all_dim", 0.0, "model.yarn_mscale_all_dim", True) == ["--mscale-all-dim", "0.0"]


def test_a_yarn_flag_out_of_range_is_one_line_naming_the_flag():
    from constraints.megatron.argv_to_specs import parse_megatron_args
    from constraints.megatron.errors import MegatronArgsError
    base = ["--num-layers", "2", "--hidden-size", "2880", "--num-attention-heads", "64", "--max-position-embeddings",
            "131072", "--vocab-size", "201088", "--seq-length", "4096", "--micro-batch-size", "1", "--global-batch-size", "8",
            "--bf16", "--position-embedding-type", "yarn"]
    with pytest.raises(MegatronArgsError) as err:
        parse_megatron_args(base + ["--rotary-scaling-factor", "0"])
    assert str(err.value) == "--rotary-scaling-factor=0: Input should be greater than 0; fix the value of --rotary-scaling-factor"
    with pytest.raises(MegatronArgsError, match=r"^--mscale-all-dim=-1: "):
        parse_megatron_args(base + ["--mscale-all-dim", "-1"])
