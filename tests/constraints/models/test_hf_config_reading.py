"""An HF config of a family shardplan has no reader for is read as a Llama-style decoder, and every part of that
reading which may change the answer is said: the family, an embedding tie the config leaves to transformers' family
default, a window the reader cannot place, a gated-MLP guess, and the keys it did not read. Bundled configs, whose
families are read by name, read with no note."""
from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from constraints.models.load import ModelError, bundled_models, load_model, model_from_mapping
from constraints.models.params import param_counts
from shardplan.cli.main import cli

# google/gemma-2-9b config.json (huggingface.co/google/gemma-2-9b, transformers 4.42); 9,241,705,984 parameters
# (model card / safetensors index). Gemma2Config defaults tie_word_embeddings to True.
GEMMA2_9B = {
    "architectures": ["Gemma2ForCausalLM"], "attention_bias": False, "attention_dropout": 0.0, "attn_logit_softcapping": 50.0,
    "bos_token_id": 2, "cache_implementation": "hybrid", "eos_token_id": 1, "final_logit_softcapping": 30.0, "head_dim": 256,
    "hidden_act": "gelu_pytorch_tanh", "hidden_activation": "gelu_pytorch_tanh", "hidden_size": 3584,
    "initializer_range": 0.02, "intermediate_size": 14336, "max_position_embeddings": 8192, "model_type": "gemma2",
    "num_attention_heads": 16, "num_hidden_layers": 42, "num_key_value_heads": 8, "pad_token_id": 0,
    "query_pre_attn_scalar": 256, "rms_norm_eps": 1e-06, "rope_theta": 10000.0, "sliding_window": 4096,
    "torch_dtype": "float32", "transformers_version": "4.42.0.dev0", "use_cache": True, "vocab_size": 256000,
}
GEMMA2_9B_PARAMS = 9_241_705_984


@pytest.mark.parametrize("name", bundled_models())
def test_bundled_configs_read_with_no_note(name):
    assert load_model(name).config_notes == ()


def test_an_unknown_family_is_read_llama_style_and_says_what_it_left_out():
    notes = model_from_mapping(dict(GEMMA2_9B), "gemma-2-9b").config_notes
    text = "\n".join(notes)
    assert "model_type 'gemma2' is not a family shardplan reads by name" in text
    assert "tie_word_embeddings is absent" in text
    assert "sliding_window=4096 is not applied" in text
    assert "model_type 'gemma2''s MLP is GeGLU (a gelu-gated three-matrix MLP" in text
    for key in ("attn_logit_softcapping=50.0", "final_logit_softcapping=30.0", "query_pre_attn_scalar=256"):
        assert key in text
    for harmless in ("rope_theta", "rms_norm_eps", "bos_token_id"):
        assert harmless not in text


def test_the_llama_style_count_of_gemma2_differs_only_by_what_the_notes_name():
    # tie_word_embeddings absent: Gemma2Config's default (True) applies, and the note says so
    absent = model_from_mapping(dict(GEMMA2_9B), "gemma-2-9b")
    tied_model = model_from_mapping({**GEMMA2_9B, "tie_word_embeddings": True}, "gemma-2-9b")
    tied = param_counts(tied_model).total
    assert param_counts(absent).total == tied
    assert any("tie_word_embeddings is absent: read as tied" in n for n in absent.config_notes)
    untied = param_counts(model_from_mapping({**GEMMA2_9B, "tie_word_embeddings": False}, "gemma-2-9b")).total
    assert untied - tied == 256_000 * 3_584  # an untied model adds one output matrix (vocab x hidden)
    # Gemma 2 has two more RMSNorms per layer (post-attention, post-MLP) than the Llama-style reading counts
    assert GEMMA2_9B_PARAMS - tied == 2 * 42 * 3_584
    assert not any("tie_word_embeddings" in n for n in tied_model.config_notes)


def test_a_plain_gelu_mlp_of_an_unknown_family_is_read_plain_and_says_so():
    cfg = {**GEMMA2_9B, "model_type": "somefamily", "hidden_act": "gelu", "tie_word_embeddings": False}
    cfg.pop("sliding_window")
    model = model_from_mapping(cfg, "x")
    assert not model.activation.gated and not any("tie_word_embeddings" in n for n in model.config_notes)
    # GPT-2 / Falcon style is the reading; a gated MLP of the same act (Gemma's) would be half again as large: said
    assert any("hidden_act 'gelu' of an unknown family is read as a plain two-matrix MLP" in n for n in model.config_notes)


def test_gemma_mlp_is_geglu_whatever_hidden_act_says():
    # google/gemma-7b config.json: hidden_act "gelu", GemmaMLP gate_proj / up_proj / down_proj; HF counts 8,537,680,896
    # parameters (tied embeddings): 256,000 x 3,072 embedding + 28 x (50,331,648 attention + 3 x 3,072 x 24,576 MLP
    # + 2 x 3,072 norms) + 3,072
    cfg = {"model_type": "gemma", "hidden_size": 3072, "intermediate_size": 24576, "num_hidden_layers": 28,
           "num_attention_heads": 16, "num_key_value_heads": 16, "head_dim": 256, "vocab_size": 256000,
           "max_position_embeddings": 8192, "hidden_act": "gelu", "tie_word_embeddings": True, "rope_theta": 10000.0}
    model = model_from_mapping(cfg, "gemma-7b")
    assert model.activation.gated and param_counts(model).total == 8_537_680_896
    assert any("MLP is GeGLU" in n for n in model.config_notes)


def test_qwen2_slides_only_from_max_window_layers_up():
    # transformers Qwen2Config.layer_types: "sliding_attention" for layer i >= max_window_layers when
    # use_sliding_window, "full_attention" below it (28-layer Qwen2.5-7B shape, window on the top 14 layers)
    cfg = {"model_type": "qwen2", "hidden_size": 3584, "intermediate_size": 18944, "num_hidden_layers": 28,
           "num_attention_heads": 28, "num_key_value_heads": 4, "vocab_size": 152064, "max_position_embeddings": 131072,
           "hidden_act": "silu", "sliding_window": 4096, "use_sliding_window": True, "max_window_layers": 14}
    model = model_from_mapping(cfg, "qwen2-swa")
    assert model.window_size == 4095 and model.window_layers == (False,) * 14 + (True,) * 14
    assert model_from_mapping({**cfg, "max_window_layers": 28}, "q").window_size is None  # transformers' default: none
    assert model_from_mapping({**cfg, "use_sliding_window": False}, "q").window_size is None
    with pytest.raises(ModelError, match="max_window_layers must be an integer, got '14'"):
        model_from_mapping({**cfg, "max_window_layers": "14"}, "q")


def _gemma_recipe(tmp_path):
    """(Gemma-2-9B config path, a recipe file using it) in tmp_path."""
    path = tmp_path / "gemma-2-9b.json"
    path.write_text(json.dumps(GEMMA2_9B))
    recipe = tmp_path / "recipe.yaml"
    recipe.write_text(f"model: {path}\nhardware: h100-sxm-80gb\nnodes: 1\ngpus_per_node: 8\n"
                      "job: {seq_length: 4096, global_batch_size: 64}\nrecipe: {tp: 2, mbs: 1}\n")
    return path, recipe


def test_check_and_solve_show_the_notes(tmp_path):
    path, recipe = _gemma_recipe(tmp_path)
    out = CliRunner().invoke(cli, ["check", str(recipe), "--format", "json"])
    assert out.exit_code in (0, 1), out.output
    warned = [w for w in json.loads(out.output)["warnings"] if w["rule"] == "model_config"]
    assert len(warned) == len(model_from_mapping(dict(GEMMA2_9B), "g").config_notes) == 5
    out = CliRunner().invoke(cli, ["solve", "--model", str(path), "--hardware", "h100-sxm-80gb", "--nodes", "1",
                                   "--gpus-per-node", "8", "--seq-length", "4096", "--global-batch-size", "64",
                                   "--top", "1", "--proposer", "none", "--format", "json"])
    assert out.exit_code == 0, out.output
    assert any("attn_logit_softcapping" in n for n in json.loads(out.output)["model_notes"])


# Qwen/Qwen2.5-0.5B config.json (huggingface.co): 494,032,768 parameters (safetensors metadata; model card "0.49B").
# transformers' Qwen2Attention builds q/k/v with bias=True and o_proj without, which the config does not state.
QWEN25_05B = {"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_size": 896, "intermediate_size": 4864,
              "num_hidden_layers": 24, "num_attention_heads": 14, "num_key_value_heads": 2, "vocab_size": 151936,
              "tie_word_embeddings": True, "max_position_embeddings": 32768, "max_window_layers": 21,
              "sliding_window": 32768, "use_sliding_window": False, "rope_theta": 1000000.0, "rms_norm_eps": 1e-06,
              "hidden_act": "silu", "torch_dtype": "bfloat16"}
# Qwen/Qwen2-57B-A14B config.json: one gated shared expert of shared_expert_intermediate_size beside 64 routed ones
QWEN2_57B_A14B = {"architectures": ["Qwen2MoeForCausalLM"], "model_type": "qwen2_moe", "hidden_size": 3584,
                  "intermediate_size": 18944, "moe_intermediate_size": 2560, "shared_expert_intermediate_size": 20480,
                  "num_experts": 64, "num_experts_per_tok": 8, "num_hidden_layers": 28, "num_attention_heads": 28,
                  "num_key_value_heads": 4, "vocab_size": 151936, "decoder_sparse_step": 1, "mlp_only_layers": [],
                  "norm_topk_prob": False, "output_router_logits": False, "router_aux_loss_coef": 0.001,
                  "max_position_embeddings": 32768, "max_window_layers": 28, "rms_norm_eps": 1e-06,
                  "rope_theta": 1000000.0, "sliding_window": 65536, "use_sliding_window": False,
                  "tie_word_embeddings": False, "hidden_act": "silu", "torch_dtype": "bfloat16"}


def test_qwen2_attention_has_its_qkv_bias():
    model = model_from_mapping(dict(QWEN25_05B), "Qwen2.5-0.5B")
    assert model.qkv_bias and not model.attention_bias and model.config_notes == ()
    assert param_counts(model).total == 494_032_768


def test_qwen2_moe_counts_its_gated_shared_expert():
    model = model_from_mapping(dict(QWEN2_57B_A14B), "Qwen2-57B-A14B")
    assert model.moe_shared_expert_intermediate_size == 20480 and model.moe_shared_expert_gate
    assert model.config_notes == ()
    h, layers = 3584, 28
    # per layer, the modules transformers' Qwen2MoeDecoderLayer holds (modeling_qwen2_moe.py)
    attention = h * h + h + 2 * (h * 512 + 512) + h * h     # q (+bias), k, v (+bias, 4 KV heads x 128), o
    moe = 64 * 3 * h * 2560 + h * 64 + 3 * h * 20480 + h   # experts, router, shared expert, shared_expert_gate
    expected = layers * (attention + 2 * h + moe) + 2 * 151936 * h + h
    counts = param_counts(model)
    assert counts.total == expected == 57_408_658_944  # "57B" in the model's name
    assert round(counts.active / 1e9, 1) == 14.2           # "A14B"


def test_an_unknown_family_missing_a_key_is_pointed_to_a_model_yaml():
    falcon = {"model_type": "falcon", "hidden_size": 8192, "num_attention_heads": 128, "num_hidden_layers": 60,
              "num_kv_heads": 8, "vocab_size": 65024, "new_decoder_architecture": True}
    with pytest.raises(ModelError, match="not a family shardplan reads by name; write a model YAML instead"):
        model_from_mapping(falcon, "falcon-40b")


def test_rope_theta_and_llama3_scaling_reach_the_rendered_flags():
    from constraints.spec import JobSpec, Recipe
    from templates.recipe_args import recipe_to_megatron_args

    llama = load_model("Llama-3.1-70B")
    assert llama.rotary_base == 500000.0 and llama.llama3_rope_scaling_factor == 8.0
    args = recipe_to_megatron_args(llama, JobSpec(seq_length=8192, global_batch_size=128), Recipe(tp=8))
    assert args[args.index("--rotary-base") + 1] == "500000" and "--use-rope-scaling" in args
    qwen_args = recipe_to_megatron_args(model_from_mapping(dict(QWEN25_05B), "q"),
                                        JobSpec(seq_length=4096, global_batch_size=64), Recipe())
    assert "--add-qkv-bias" in qwen_args and "--disable-bias-linear" in qwen_args


def test_megatron_add_qkv_bias_adds_no_output_projection_bias():
    from constraints.megatron.model import model_from_flags

    flags = {"--num-layers": 32, "--hidden-size": 4096, "--num-attention-heads": 32, "--group-query-attention": True,
             "--num-query-groups": 8, "--ffn-hidden-size": 14336, "--swiglu": True, "--max-position-embeddings": 4096,
             "--vocab-size": 128256, "--disable-bias-linear": True, "--normalization": "RMSNorm",
             "--position-embedding-type": "rope"}
    plain, _ = model_from_flags(flags, "m")
    biased, _ = model_from_flags({**flags, "--add-qkv-bias": True}, "m")
    assert biased.qkv_bias and not biased.attention_bias
    # Megatron's linear_qkv bias only (4096 + 2 x 1024 per layer); linear_proj follows add_bias_linear (off)
    assert param_counts(biased).total - param_counts(plain).total == 32 * (4096 + 2 * 1024)


def test_render_warns_about_what_the_model_reading_left_out(tmp_path):
    _, recipe = _gemma_recipe(tmp_path)
    out = CliRunner().invoke(cli, ["render", str(recipe), "--format", "torchrun"])
    assert out.exit_code == 0, out.output
    assert "warning: model config: model_type 'gemma2' is not a family" in out.stderr
    import shardplan  # the API returns the same notes the command warns with

    result = shardplan.render(recipe)
    notes = result.model_notes
    assert len(notes) == 5 and [f"warning: model config: {n}" for n in notes] + result.placeholders == out.stderr.splitlines()


def test_a_rope_scaling_render_does_not_write_is_said():
    # Megatron-LM d98e8a64 arguments.py: --rotary-seq-len-interpolation-factor (int) is linear position interpolation
    base = {"model_type": "llama", "hidden_size": 1024, "intermediate_size": 4096, "num_hidden_layers": 4,
            "num_attention_heads": 16, "vocab_size": 32000, "hidden_act": "silu", "rope_theta": 10000.0}
    linear = model_from_mapping({**base, "rope_scaling": {"type": "linear", "factor": 4.0}}, "x").config_notes
    assert any("rope_scaling type 'linear'" in n and "--rotary-seq-len-interpolation-factor 4" in n for n in linear)
    dynamic = model_from_mapping({**base, "rope_scaling": {"rope_type": "dynamic", "factor": 2.0}}, "x").config_notes
    assert any("rope_scaling type 'dynamic'" in n for n in dynamic)
    llama3 = {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
              "original_max_position_embeddings": 8192}
    assert model_from_mapping({**base, "rope_scaling": llama3}, "x").config_notes == ()


def test_falcon_multi_query_is_one_kv_head(tmp_path):
    # tiiuae/falcon-7b config.json (+ intermediate_size 4 x 4544, the FFN width FalconConfig derives): multi_query
    # means one KV head (FalconAttention); HF counts 6,921,720,704 parameters, 4,544 more than the Llama-style reading
    # (Falcon's final LayerNorm has a bias, which the RMSNorm reading lacks)
    cfg = {"model_type": "falcon", "vocab_size": 65024, "hidden_size": 4544, "intermediate_size": 18176,
           "num_hidden_layers": 32, "num_attention_heads": 71, "multi_query": True, "parallel_attn": True,
           "hidden_act": "gelu", "tie_word_embeddings": True}
    folder = tmp_path / "falcon-7b"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(cfg))
    model = load_model(str(folder / "config.json"))
    assert model.name == "falcon-7b"  # an HF download's folder names it, not "config"
    assert model.num_query_groups == 1 and param_counts(model).total == 6_921_720_704 - 4_544
    assert model_from_mapping({**cfg, "num_attention_heads": 64, "multi_query": False, "num_kv_heads": 8}, "x").num_query_groups == 8


def test_configs_whose_refusals_name_the_hf_key_or_the_shape_found_elsewhere():
    base = {"model_type": "llama", "hidden_size": 1024, "intermediate_size": 4096, "num_hidden_layers": 4,
            "num_attention_heads": 16, "vocab_size": 32000, "hidden_act": "silu"}
    with pytest.raises(ModelError, match="32 experts but no num_experts_per_tok"):
        model_from_mapping({**base, "model_type": "mixtral", "num_local_experts": 32}, "x")
    # LLaVA keeps the language model under text_config; the shape is there, not missing
    with pytest.raises(ModelError, match="'llava' is multimodal: its language model's hidden_size is under text_config"):
        model_from_mapping({"model_type": "llava", "text_config": dict(base), "vision_config": {"hidden_size": 1024}}, "x")
    # DeepSeek-V2 is read by name (MLA and the shared-expert MoE key by key), not as a Llama-style guess
    v2 = {**base, "model_type": "deepseek_v2", "kv_lora_rank": 512, "q_lora_rank": None, "qk_nope_head_dim": 128,
          "qk_rope_head_dim": 64, "v_head_dim": 128, "n_routed_experts": 64, "num_experts_per_tok": 6,
          "moe_intermediate_size": 1408, "n_shared_experts": 2, "first_k_dense_replace": 1, "topk_method": "greedy"}
    assert not any("not a family shardplan reads by name" in n for n in model_from_mapping(v2, "v2").config_notes)
