"""`--deterministic-mode` judged as Megatron-LM applies it (megatron/training/determinism.py @ d98e8a64, called by
validate_args): the options it asserts off, the launch environment it asserts deterministic, and the projection's
warning that deterministic kernels are not priced. Also `--cross-entropy-fusion-impl te` with
`--cross-entropy-loss-fusion`, which validate_args refuses. Megatron's own parse_args / validate_args
(shared/tools/megatron_validate.py) gave the verdicts of the argument cases below: deterministic mode alone valid;
with --cross-entropy-loss-fusion "AssertionError: --deterministic-mode requires: cross_entropy_loss_fusion=False";
with --tp-comm-overlap "... tp_comm_overlap=False"; te fusion "Transformer Engine cross entropy loss fusion is
disabled due to stability issues"; --cross-entropy-fusion-impl te alone valid."""
from __future__ import annotations

import pytest

from constraints.read import load_check_input
from shardplan.verdict import check_and_project

BASE = ["--num-layers", "32", "--hidden-size", "4096", "--ffn-hidden-size", "14336", "--num-attention-heads", "32",
        "--seq-length", "4096", "--max-position-embeddings", "4096", "--micro-batch-size", "1", "--global-batch-size", "64",
        "--bf16", "--vocab-size", "32000", "--tokenizer-type", "NullTokenizer", "--tensor-model-parallel-size", "2",
        "--sequence-parallel"]


def judged(tmp_path, *extra: str, env: str = "") -> dict:
    path = tmp_path / "train.sh"
    path.write_text(f"export CUDA_DEVICE_MAX_CONNECTIONS=1\n{env}\ntorchrun --nproc_per_node 8 pretrain_gpt.py "
                    + " ".join(BASE + list(extra)) + "\n")
    return check_and_project(load_check_input(str(path), "h100-sxm-80gb", None, None))["json"]


def rules(result: dict) -> set[str]:
    return {v["rule"] for v in result["violations"]}


@pytest.mark.parametrize("extra, refused_by", [
    (["--deterministic-mode"], None),
    (["--deterministic-mode", "--cross-entropy-loss-fusion"], "deterministic_mode"),
    (["--deterministic-mode", "--tp-comm-overlap"], "deterministic_mode"),
    (["--cross-entropy-loss-fusion", "--cross-entropy-fusion-impl", "te"], "megatron_exits"),
    (["--cross-entropy-fusion-impl", "te"], None),
    (["--cross-entropy-loss-fusion", "--cross-entropy-fusion-impl", "native"], None),
])
def test_arguments_deterministic_mode_and_te_cross_entropy_require(tmp_path, extra, refused_by):
    result = judged(tmp_path, *extra)
    assert result["legal"] is (refused_by is None)
    if refused_by:
        assert refused_by in rules(result)
    assert not {"--deterministic-mode", "--cross-entropy-fusion-impl"} & set(result["unknown_flags"])


@pytest.mark.parametrize("env, legal", [
    ("", True),                                             # unset: Megatron fills Ring, 0 and :4096:8
    ("export NCCL_ALGO=Ring", True),
    ("export NCCL_ALGO=Ring,^NVLS", True),                  # comma-separated tokens, each accepted
    ("export NCCL_ALGO=Tree", False),                       # Tree is refused by name
    ("export NCCL_ALGO=Ring,Tree", False),
    ("export NVTE_ALLOW_NONDETERMINISTIC_ALGO=1", False),
    ("export NVTE_ALLOW_NONDETERMINISTIC_ALGO=0", True),
    ("export CUBLAS_WORKSPACE_CONFIG=:16:8", True),
    ("export CUBLAS_WORKSPACE_CONFIG=:0:0", False),
    ("export MAMBA_DETERMINISTIC=0", False),
    ("export CAUSAL_CONV1D_DETERMINISTIC=1", True),
])
def test_the_launch_environment_of_a_deterministic_run(tmp_path, env, legal):
    result = judged(tmp_path, "--deterministic-mode", env=env)
    assert result["legal"] is legal
    assert ("deterministic_mode" in rules(result)) is (not legal)


def test_the_same_environment_without_deterministic_mode_is_not_judged(tmp_path):
    assert judged(tmp_path, env="export NCCL_ALGO=Tree")["legal"]


def test_a_deterministic_run_is_projected_with_a_warning_that_its_kernels_are_not_priced(tmp_path):
    result = judged(tmp_path, "--deterministic-mode")
    assert result["projection"] is not None
    assert "deterministic_mode_not_priced" in {w["rule"] for w in result["warnings"]}
    assert "deterministic_mode_not_priced" not in {w["rule"] for w in judged(tmp_path)["warnings"]}


# A Megatron-Bridge config is validated by Bridge, not by Megatron-LM's validate_args (Megatron-Bridge 067f987d
# training/config.py _validate_and_apply_deterministic_mode; GPTModelProvider.cross_entropy_loss_fusion defaults to True)
BRIDGE = """model:
  num_layers: 32
  hidden_size: 4096
  ffn_hidden_size: 14336
  num_attention_heads: 32
  num_query_groups: 8
  kv_channels: 128
  gated_linear_unit: true
  normalization: RMSNorm
  position_embedding_type: rope
  vocab_size: 128256
  seq_length: 4096
  tensor_model_parallel_size: 2
  sequence_parallel: true
{model_extra}train:
  micro_batch_size: 1
  global_batch_size: 64
mixed_precision: bf16_mixed
env_vars:
  CUDA_DEVICE_MAX_CONNECTIONS: 1
{env}"""


def bridge_judged(tmp_path, model_extra: str = "", env: str = "") -> dict:
    path = tmp_path / "bridge.yaml"
    path.write_text(BRIDGE.format(model_extra=model_extra, env=env))
    return check_and_project(load_check_input(str(path), "h100-sxm-80gb", 1, 8))["json"]


@pytest.mark.parametrize("model_extra, env, legal", [
    ("  deterministic_mode: true\n", "", False),                                             # the provider's fusion default
    ("  deterministic_mode: true\n  cross_entropy_loss_fusion: false\n", "", True),
    ("  deterministic_mode: true\n  cross_entropy_loss_fusion: false\n", "  NCCL_ALGO: Tree\n", True),
    ("  deterministic_mode: true\n  cross_entropy_loss_fusion: false\n", "  NCCL_ALGO: Ring,Tree\n", False),
    ("  cross_entropy_loss_fusion: true\n  cross_entropy_fusion_impl: te\n", "", True),        # Megatron-LM's assert only
])
def test_a_bridge_config_is_held_to_bridge_s_own_deterministic_checks(tmp_path, model_extra, env, legal):
    result = bridge_judged(tmp_path, model_extra, env)
    assert result["legal"] is legal, result["violations"]
