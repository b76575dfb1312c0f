"""The vocabulary of a tokenizer named by its HuggingFace repository (constraints/megatron/tokenizer_vocab.py): the repo's HF
config vocab_size, the same as the bundled model's config where the repo is one, for Megatron's and Primus's
tokenizer types; padded as Megatron pads it; an unlisted repository still asks for the size."""
from __future__ import annotations

import shutil

import pytest

from constraints.megatron.argv_to_specs import MegatronArgsError, parse_megatron_args
from constraints.megatron.tokenizer_vocab import HF_CONFIG_VOCAB, hf_repo_vocab
from constraints.megatron.vocab import bundled_model_for
from constraints.models.load import load_model
from constraints.models.params import padded_vocab_size
from tests.helpers.builders import TESTS

MODEL = ("--num-layers 2 --hidden-size 1024 --num-attention-heads 16 --seq-length 2048 --max-position-embeddings 2048 "
         "--micro-batch-size 1 --global-batch-size 32 --bf16")
BUNDLED = [repo for repo in HF_CONFIG_VOCAB if bundled_model_for(repo)]


def test_the_table_agrees_with_every_bundled_model_config_it_names():
    # the bundled configs are copies of the same HF config.json files (constraints/models/SOURCES): an independent check
    assert len(BUNDLED) >= 10
    for repo in BUNDLED:
        assert load_model(bundled_model_for(repo)).vocab_size == HF_CONFIG_VOCAB[repo], repo


@pytest.mark.parametrize("kind, repo, vocab", [
    ("Llama3Tokenizer", "meta-llama/Meta-Llama-3.2-1B", 128256),  # Primus's spelling of meta-llama/Llama-3.2-1B
    ("DeepSeekV2Tokenizer", "deepseek-ai/DeepSeek-V2-Lite", 102400),
    ("HuggingFaceTokenizer", "Qwen/Qwen2.5-7B", 152064),
    ("HuggingFaceTokenizer", "/checkpoints/Qwen2.5-3B/", 151936),  # a local copy named after the repository
    ("MixtralTokenizer", "mistralai/Mixtral-8x22B-v0.1", 32000),
])
def test_a_named_tokenizer_gives_its_config_vocabulary_with_a_note(kind, repo, vocab):
    cfg = parse_megatron_args((MODEL + f" --tokenizer-type {kind} --tokenizer-model {repo}").split())
    assert cfg.model.vocab_size == vocab
    assert any(f"{vocab:,}" in n and "not read" in n for n in cfg.notes)


def test_megatron_pads_the_vocabulary_to_a_multiple_of_128_times_tp():
    # Llama 3: 128,256 at TP 8 -> multiple of 1,024 -> 126 x 1,024 = 129,024; Qwen2.5-7B 152,064 = 297 x 512 at TP 4
    cfg = parse_megatron_args((MODEL + " --tokenizer-type Llama3Tokenizer --tokenizer-model "
                                       "meta-llama/Llama-3.1-405B").split())
    assert padded_vocab_size(cfg.model, 8) == 129_024
    qwen = parse_megatron_args((MODEL + " --tokenizer-type HuggingFaceTokenizer --tokenizer-model Qwen/Qwen2.5-7B").split())
    assert padded_vocab_size(qwen.model, 4) == 152_064


def test_an_unlisted_repository_still_asks_for_the_size():
    assert hf_repo_vocab("Qwen/Qwen3.5-35B-A3B") is None
    with pytest.raises(MegatronArgsError, match="add --vocab-size N"):
        parse_megatron_args((MODEL + " --tokenizer-type HuggingFaceTokenizer --tokenizer-model Qwen/Qwen3.5-35B-A3B").split())
    # a size given by the user wins over the table (it is what the user says the tokenizer has)
    cfg = parse_megatron_args((MODEL + " --tokenizer-type Llama3Tokenizer --tokenizer-model meta-llama/Llama-3.2-1B "
                                       "--vocab-size 128000").split())
    assert cfg.model.vocab_size == 128000


def test_a_primus_experiment_naming_only_a_tokenizer_gives_a_verdict(tmp_path):
    data = TESTS / "data" / "stack_configs"
    for name in ("primus-llama8b-legal.yaml", "test_llama_base.yaml"):
        shutil.copy(data / name, tmp_path / name)
    model = (data / "test_llama_8b.yaml").read_text().replace("vocab_size: 128256\n", "")
    model = model.replace("tokenizer_type: HuggingFaceTokenizer\ntokenizer_model: meta-llama/Llama-3.1-8B",
                          "tokenizer_type: Llama3Tokenizer\ntokenizer_model: meta-llama/Llama-3.1-70B")
    assert "Llama3Tokenizer" in model and "vocab_size" not in model
    (tmp_path / "test_llama_8b.yaml").write_text(model)
    from shardplan.api import check

    res = check(str(tmp_path / "primus-llama8b-legal.yaml"), hardware="mi300x", nodes=1, gpus_per_node=8, project=False)
    assert res.legal and any("128,256" in w.message for w in res.warnings)


def test_a_primus_tokenizer_type_in_a_megatron_launch_script_is_megatrons_argparse_exit(tmp_path):
    from constraints.read import load_check_input

    script = tmp_path / "train.sh"
    script.write_text("#!/bin/bash\nexport CUDA_DEVICE_MAX_CONNECTIONS=1\ntorchrun --nproc_per_node 8 pretrain_gpt.py "
                      f"{MODEL} --tokenizer-type Llama3Tokenizer --tokenizer-model meta-llama/Llama-3.1-8B\n")
    loaded = load_check_input(str(script), "h100-sxm-80gb", None, None)
    said = [v.message for v in loaded.preflight_violations if v.rule == "megatron_argparse"]
    assert said == ["Megatron's argparse exits: argument --tokenizer-type: invalid choice: 'Llama3Tokenizer' (a "
                    "tokenizer type only Primus adds)"]
    ok = script.read_text().replace("Llama3Tokenizer", "HuggingFaceTokenizer")
    script.write_text(ok)
    loaded = load_check_input(str(script), "h100-sxm-80gb", None, None)
    assert not [v for v in loaded.preflight_violations if v.rule == "megatron_argparse"]
    assert loaded.case.model.vocab_size == 128256
