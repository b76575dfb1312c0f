"""`check` refuses a torchtitan job TOML and a NeMo AutoModel recipe in one line naming the stack (exit 2), instead of
reading them as a Megatron launch script or a shardplan recipe and pricing them as Megatron."""
from __future__ import annotations

from tests.helpers.builders import run_cli

# the head of pytorch/torchtitan torchtitan/models/llama3/train_configs/llama3_8b.toml @e7c0cae
TORCHTITAN_TOML = """[job]
dump_folder = "./outputs"
description = "Llama 3 8B training"

[model]
name = "llama3"
flavor = "8B"

[training]
local_batch_size = 1
seq_len = 8192
compile = false

[parallelism]
data_parallel_replicate_degree = 1
data_parallel_shard_degree = -1
tensor_parallel_degree = 1

[activation_checkpoint]
mode = "selective"
selective_ac_option = "op"
"""

# the keys of NVIDIA-NeMo/Automodel examples/llm_benchmark/qwen/qwen3_moe_30b_te_deepep.yaml @36044ad3
AUTOMODEL_YAML = """recipe: BenchmarkingRecipeForNextTokenPrediction
step_scheduler:
  global_batch_size: 512
  local_batch_size: 4
distributed:
  strategy: fsdp2
  tp_size: 1
  ep_size: 8
  activation_checkpointing: true
model:
  _target_: nemo_automodel.NeMoAutoModelForCausalLM.from_config
  config:
    _target_: transformers.AutoConfig.from_pretrained
    pretrained_model_name_or_path: Qwen/Qwen3-30B-A3B
"""


def test_torchtitan_toml_is_refused_by_name(tmp_path):
    path = tmp_path / "llama3_8b.toml"
    path.write_text(TORCHTITAN_TOML)
    code, out, err = run_cli("check", str(path), "--hardware", "h100-sxm-80gb", "--nodes", "1")
    assert code == 2 and out == ""
    assert err.startswith("error: 'llama3_8b.toml' is a torchtitan job config (a torch-native stack")
    assert "does not price torch-native recipes" in err and len(err.strip().splitlines()) == 1


def test_automodel_yaml_is_refused_by_name(tmp_path):
    path = tmp_path / "qwen3_moe.yaml"
    path.write_text(AUTOMODEL_YAML)
    code, out, err = run_cli("check", str(path), "--hardware", "h100-sxm-80gb", "--nodes", "1")
    assert code == 2
    assert err.startswith("error: 'qwen3_moe.yaml' is a NeMo AutoModel recipe (a torch-native stack")
    assert len(err.strip().splitlines()) == 1


def test_a_shardplan_recipe_is_not_mistaken_for_one():
    code, _, err = run_cli("check", "constraints/examples/llama3-70b-h100.yaml")
    assert "torch-native" not in err
