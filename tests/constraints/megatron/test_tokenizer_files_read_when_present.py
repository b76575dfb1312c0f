"""A tokenizer file a launch names is read when it is there (issue 31): a SentencePiece model's pieces and a HF
tokenizer.json's vocabulary with its added tokens, as Megatron counts them (constraints/megatron/tokenizer_files.py).
The fixtures are tiny real tokenizers trained by tests/data/tokenizers/build_fixtures.py: 250 pieces, and 300 BPE
tokens + 3 added specials. Without the optional packages, or with a file that is not a tokenizer, it is one line."""
from __future__ import annotations

import json

import pytest

from tests.helpers.builders import TESTS, run_cli

TOKENIZERS = TESTS / "data" / "tokenizers"
FLAGS = ("--num-layers 4 --hidden-size 512 --num-attention-heads 8 --seq-length 1024 --max-position-embeddings 1024 "
         "--micro-batch-size 1 --global-batch-size 16 --bf16 ")


def _check(tmp_path, tokenizer_args: str, env=None):
    flags = tmp_path / "a.args"
    flags.write_text(FLAGS + tokenizer_args + "\n")
    return run_cli("check", str(flags), "--hardware", "h100-sxm-80gb", "--nodes", "1", "--gpus-per-node", "8",
                   "--no-projection", "--json", env=env)


def _vocab_note(out: str) -> str:
    return next(w["message"] for w in json.loads(out)["warnings"] if "vocabulary" in w["message"])


@pytest.mark.parametrize("tokenizer_args, vocab", [
    (f"--tokenizer-type Llama2Tokenizer --tokenizer-model {TOKENIZERS / 'tiny_sp.model'}", 250),
    (f"--tokenizer-type SentencePieceTokenizer --tokenizer-model {TOKENIZERS / 'tiny_sp.model'}", 250),
    (f"--tokenizer-type HuggingFaceTokenizer --tokenizer-model {TOKENIZERS / 'tiny_hf'}", 303),  # the folder
    (f"--tokenizer-type HuggingFaceTokenizer --tokenizer-model {TOKENIZERS / 'tiny_hf' / 'tokenizer.json'}", 303),
])
def test_the_vocabulary_is_the_files_own(tmp_path, tokenizer_args, vocab):
    code, out, err = _check(tmp_path, tokenizer_args)
    assert code == 0, err
    assert _vocab_note(out).startswith(f"vocabulary {vocab} from the ")


def test_a_stated_vocab_size_that_disagrees_is_kept_and_said(tmp_path):
    code, out, err = _check(tmp_path, f"--vocab-size 512 --tokenizer-type Llama2Tokenizer --tokenizer-model "
                                      f"{TOKENIZERS / 'tiny_sp.model'}")
    assert code == 0, err
    assert "--vocab-size 512 kept, though vocabulary 250 from the SentencePiece model" in _vocab_note(out)


def test_a_file_that_is_not_a_tokenizer_is_one_line(tmp_path):
    bad = tmp_path / "tokenizer.model"
    bad.write_bytes(b"not a sentencepiece model")
    code, _, err = _check(tmp_path, f"--tokenizer-type Llama2Tokenizer --tokenizer-model {bad}")
    assert code == 2 and err.count("\n") == 1 and "not a SentencePiece model" in err, err
    (tmp_path / "tok").mkdir()
    (tmp_path / "tok" / "tokenizer.json").write_text('{"model": 3}')
    code, _, err = _check(tmp_path, f"--tokenizer-type HuggingFaceTokenizer --tokenizer-model {tmp_path / 'tok'}")
    assert code == 2 and err.count("\n") == 1 and "not a HuggingFace tokenizer.json" in err, err


def test_without_the_optional_packages_the_file_is_not_read_in_one_line(tmp_path):
    shim = tmp_path / "shim"
    shim.mkdir()
    for name in ("sentencepiece", "tokenizers"):  # as if `pip install 'shardplan[tokenizers]'` was not run
        (shim / f"{name}.py").write_text(f"raise ImportError('no module named {name}')\n")
    env = {"PYTHONPATH": f"{shim}:{TESTS.parent}"}
    code, _, err = _check(tmp_path, f"--tokenizer-type Llama2Tokenizer --tokenizer-model {TOKENIZERS / 'tiny_sp.model'}",
                          env=env)
    assert code == 2 and err.count("\n") == 1, err
    assert "`sentencepiece` package is not installed (pip install 'shardplan[tokenizers]')" in err, err
    code, out, err = _check(tmp_path, f"--vocab-size 303 --tokenizer-type HuggingFaceTokenizer --tokenizer-model "
                                      f"{TOKENIZERS / 'tiny_hf'}", env=env)
    assert code == 0, err
    assert _vocab_note(out).startswith("vocabulary 303 from --vocab-size")
