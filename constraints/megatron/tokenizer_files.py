"""The vocabulary of a tokenizer file a launch names, read when the file is there: a SentencePiece model
(`--tokenizer-type Llama2Tokenizer|SentencePieceTokenizer|GPTSentencePieceTokenizer --tokenizer-model x.model`) or
a HuggingFace `tokenizer.json` (`--tokenizer-type HuggingFaceTokenizer --tokenizer-model DIR` holding one, or the
file itself).

Why: Megatron sizes the embedding from the tokenizer it loads (megatron/core/tokenizers/utils/build_tokenizer.py @
d98e8a64), so the file is the source of truth; before this, check asked for --vocab-size whenever the path did not
name a bundled model (Megatron-LM's examples/mixtral script passes its tokenizer as `$2`, issue 31). What Megatron
counts: SentencePieceTokenizer `vocab_size = self.tokenizer.get_piece_size()` (megatron/core/tokenizers/text/
libraries/sentencepiece_tokenizer.py:66 @ d98e8a64; --special-tokens missing from the model add to it, noted, not
counted), HuggingFaceTokenizer `len(self.tokenizer)` (huggingface_tokenizer.py:345), the vocabulary with its added
tokens, which `tokenizers.Tokenizer.get_vocab_size(with_added_tokens=True)` gives for a tokenizer.json.
`sentencepiece` and `tokenizers` are an optional extra (`pip install 'shardplan[tokenizers]'`); without them a file
that is there is not read, said in one line. Files are read through the bounded input boundary
(boundary.read.read_bytes) under MAX_TOKENIZER_BYTES.
"""
from __future__ import annotations

import os
from typing import Optional

from boundary.errors import InputRefused
from boundary.read import is_regular_file, read_bytes
from constraints.megatron.errors import MegatronArgsError

SENTENCEPIECE_KINDS = ("SentencePieceTokenizer", "GPTSentencePieceTokenizer", "Llama2Tokenizer")  # build_tokenizer.py:10
HF_KIND = "HuggingFaceTokenizer"
# a real tokenizer file is far smaller: Llama 3's tokenizer.json is 9 MB, Gemma's SentencePiece model 4 MB
MAX_TOKENIZER_BYTES = 64 * 1024 * 1024
INSTALL = "pip install 'shardplan[tokenizers]'"


def tokenizer_file(kind: str, model: str) -> Optional[str]:
    """The file Megatron loads for `kind` from --tokenizer-model `model`, when it exists here; None otherwise."""
    if kind in SENTENCEPIECE_KINDS:
        return model if is_regular_file(model) else None
    if kind == HF_KIND:
        for path in (model, os.path.join(model, "tokenizer.json")):
            if path.endswith(".json") and is_regular_file(path):
                return path
    return None


def file_vocab(kind: str, path: str) -> tuple[Optional[int], str]:
    """(the tokenizer's vocabulary, a note naming the file) for a file tokenizer_file found; (None, why) when the
    library that reads it is not installed. An unreadable or corrupt file is a one-line MegatronArgsError."""
    try:
        data = read_bytes(path, "tokenizer", f"--tokenizer-model {path}", MAX_TOKENIZER_BYTES,
                          expected="the tokenizer file the run loads")
    except InputRefused as exc:
        raise MegatronArgsError(str(exc)) from None
    if kind in SENTENCEPIECE_KINDS:
        return _sentencepiece_vocab(path, data)
    return _tokenizer_json_vocab(path, data)


def _sentencepiece_vocab(path: str, data: bytes) -> tuple[Optional[int], str]:
    try:
        import sentencepiece  # optional extra: absent, the file is not read
    except ImportError:
        return None, f"the SentencePiece model {path} is not read: the `sentencepiece` package is not installed ({INSTALL})"
    processor = sentencepiece.SentencePieceProcessor()
    try:
        processor.LoadFromSerializedProto(data)
    except (RuntimeError, OSError, TypeError) as exc:
        raise MegatronArgsError(f"--tokenizer-model {path}: not a SentencePiece model ({str(exc).splitlines()[0][:80]}); "
                                "give the tokenizer.model file the run loads") from None
    size = processor.get_piece_size()
    return size, f"vocabulary {size:,} from the SentencePiece model {path} (its pieces, as Megatron counts them)"


def _tokenizer_json_vocab(path: str, data: bytes) -> tuple[Optional[int], str]:
    try:
        from tokenizers import Tokenizer  # optional extra: absent, the file is not read
    except ImportError:
        return None, f"the tokenizer file {path} is not read: the `tokenizers` package is not installed ({INSTALL})"
    try:
        tokenizer = Tokenizer.from_str(data.decode("utf-8"))
    except Exception as exc:  # tokenizers raises its own Exception subclass for a file it cannot parse
        raise MegatronArgsError(f"--tokenizer-model {path}: not a HuggingFace tokenizer.json "
                                f"({str(exc).splitlines()[0][:80] if str(exc) else type(exc).__name__}); give the "
                                "tokenizer.json the run loads") from None
    size = tokenizer.get_vocab_size(with_added_tokens=True)
    return size, f"vocabulary {size:,} from the tokenizer file {path} (with its added tokens, as len(tokenizer) counts them)"


__all__ = ["HF_KIND", "MAX_TOKENIZER_BYTES", "SENTENCEPIECE_KINDS", "file_vocab", "tokenizer_file"]
