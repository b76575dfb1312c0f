"""The vocabulary a Megatron-LM command line trains with, when it names a tokenizer instead of `--vocab-size`.

Why its own module: Megatron sizes the embedding from the *tokenizer* (megatron/core/tokenizers/utils/
build_tokenizer.py @ d98e8a64: `padded_vocab_size = vocab_size_with_padding(tokenizer.vocab_size, args)`),
and most example scripts name a tokenizer rather than a size. The padding itself (to a multiple of
--make-vocab-size-divisible-by x TP) stays in constraints.models.params.padded_vocab_size; this module only finds the
unpadded count, or says which flag to add when it cannot be known from the arguments.

Sources: GPT2BPETokenizer reads GPT-2's encoder.json, 50,257 tokens (Radford et al. 2019; HF `gpt2` config
vocab_size 50257); pretrain_gpt.py makes it the default (`args_defaults={'tokenizer_type': 'GPT2BPETokenizer'}`).
NullTokenizer (null_tokenizer.py) has exactly --vocab-size tokens. A HuggingFace / SentencePiece / TikToken /
SFT tokenizer named by --tokenizer-model (and Primus's tokenizer types, all built as HuggingFace tokenizers): the
vocabulary of the bundled model of that name, else of the HF repository constraints/megatron/tokenizer_vocab.py lists (its
HF config vocab_size), reported as such because the tokenizer file itself is not read.
"""
from __future__ import annotations

import re
from typing import Any, Optional

from constraints.megatron.errors import MegatronArgsError
from constraints.megatron.tokenizer_files import file_vocab, tokenizer_file
from constraints.megatron.tokenizer_vocab import PRIMUS_HF_TOKENIZERS, hf_repo_vocab
from constraints.models.load import bundled_models, load_model
from constraints.script.expand import UNRESOLVED_RE

GPT2_BPE_VOCAB = 50257
_FILE_TOKENIZERS = ("HuggingFaceTokenizer", "SFTTokenizer", "SentencePieceTokenizer", "GPTSentencePieceTokenizer",
                    "Llama2Tokenizer", "TikTokenizer", "MultimodalTokenizer") + PRIMUS_HF_TOKENIZERS


def bundled_model_for(tokenizer_model: str) -> Optional[str]:
    """The bundled model a --tokenizer-model value names (`deepseek-ai/DeepSeek-V3`, `/ckpt/Llama-3.1-8B/`), if any."""
    names = {n.lower(): n for n in bundled_models()}
    for part in reversed([p for p in re.split(r"[/\\]", tokenizer_model.strip()) if p]):
        for form in _name_forms(part.lower()):
            if form in names:
                return names[form]
    return None


def _name_forms(name: str) -> list[str]:
    """A checkpoint folder's name, then without what releases add to the model's own name: the publisher's prefix
    (`NVIDIA-Nemotron-3-Nano-30B-A3B-BF16`) and variant suffixes (-Instruct, -Base, -HF, a weight precision), one
    at a time; the tokenizer is the model's either way."""
    forms = [name]
    bare = re.sub(r"^nvidia-", "", name)
    while True:
        forms.append(bare)
        shorter = re.sub(r"-(instruct|base|hf|bf16|fp8|nvfp4|fp4)$", "", bare)
        if shorter == bare:
            return forms
        bare = shorter


def vocab_from_tokenizer(raw: dict[str, Any], entry_default: Optional[str]) -> tuple[Optional[int], Optional[str]]:
    """(unpadded vocabulary, a note saying where it came from) for the parsed flags.

    `entry_default` is the entry point's default --tokenizer-type (GPT2BPETokenizer for pretrain_gpt.py).
    (None, None) when --vocab-size is the only source and is absent and no tokenizer is named; a
    MegatronArgsError naming the flag to add when the tokenizer's size cannot be known."""
    # the entry point's default tokenizer is what Megatron builds when the arguments give its files (--vocab-file /
    # --merge-file) but no --tokenizer-type; arguments with only --vocab-size keep that size (as before).
    files = "--vocab-file" in raw or "--merge-file" in raw
    kind = raw.get("--tokenizer-type") or (entry_default if files else None)
    given = raw.get("--vocab-size")
    if kind == "GPT2BPETokenizer":
        if given is not None and given != GPT2_BPE_VOCAB:
            return GPT2_BPE_VOCAB, (f"--vocab-size {given} is ignored: Megatron sizes the embedding from GPT2BPETokenizer "
                                    f"({GPT2_BPE_VOCAB:,} tokens)")
        return GPT2_BPE_VOCAB, None if given is not None else f"vocabulary {GPT2_BPE_VOCAB:,} from GPT2BPETokenizer"
    if kind == "NullTokenizer":
        if given is None:
            raise MegatronArgsError("--vocab-size: NullTokenizer (mock data) takes its size from --vocab-size; add "
                                    "--vocab-size N")
        return given, None
    if kind in _FILE_TOKENIZERS:
        model = raw.get("--tokenizer-model")
        path = tokenizer_file(kind, model) if isinstance(model, str) and "\x00" not in model and "${" not in model else None
        not_read = None
        if path is not None:  # the file the run loads is here: its own count (constraints/megatron/tokenizer_files.py)
            vocab, said = file_vocab(kind, path)
            if vocab is not None:
                if given is not None and given != vocab:
                    return given, f"--vocab-size {given} kept, though {said}; Megatron uses the tokenizer's own count"
                return vocab, said
            not_read = said
        hit = bundled_model_for(model) if isinstance(model, str) and "\x00" not in model and "${" not in model else None
        if hit is not None:
            vocab = load_model(hit).vocab_size
            if given is not None and given != vocab:
                return given, (f"--vocab-size {given} kept, though --tokenizer-model {model} names {hit} "
                               f"({vocab:,} in its config); Megatron uses the tokenizer's own count")
            return vocab, (f"vocabulary {vocab:,} from the bundled {hit} config (the model --tokenizer-model names; "
                           "the tokenizer file is not read)")
        listed = hf_repo_vocab(model) if isinstance(model, str) and "\x00" not in model and "${" not in model else None
        if listed is not None and given is None:
            repo, vocab = listed
            return vocab, (f"vocabulary {vocab:,} from the vocab_size of {repo}'s HF config.json (the tokenizer file is "
                           "not read; Megatron pads len(tokenizer), which that count bounds from above)")
        if given is not None:
            return given, (f"vocabulary {given:,} from --vocab-size; Megatron takes it from the {kind} file, "
                           "which check does not read")
        if not_read is not None:
            raise MegatronArgsError(f"--vocab-size: {not_read}; install it, or add --vocab-size N (the tokenizer's size)")
        shown = model if isinstance(model, str) else "(none)"
        held = UNRESOLVED_RE.search(shown)
        if held is not None and held.group(1).isdigit():  # Megatron's mixtral example: TOKENIZER_MODEL=$2
            raise MegatronArgsError(f"--vocab-size: the {kind} vocabulary comes from --tokenizer-model ${held.group(1)}, "
                                    f"the script's argument {held.group(1)}; pass the script's arguments after -- "
                                    "(shardplan check SCRIPT -- ARG1 ARG2 ...), or add --vocab-size N")
        raise MegatronArgsError(f"--vocab-size: the {kind} vocabulary comes from --tokenizer-model {shown}, which check "
                                "cannot read (no such file here); add --vocab-size N (the tokenizer's size), or pass the "
                                "file's path")
    held = UNRESOLVED_RE.search(kind) if isinstance(kind, str) else None
    # `--tokenizer-type ${TOKENIZER_TYPE}` with the variable unset (not a positional `$1`): the tokenizer is unknown
    if held is not None and not held.group(1)[0].isdigit():
        name = held.group(1)
        if given is None:
            raise MegatronArgsError(f"--tokenizer-type uses ${name}, which is not set; set {name} in the script or in the "
                                    f"environment ({name}=VALUE shardplan check ...), or add --vocab-size N")
        return given, f"vocabulary {given:,} from --vocab-size: --tokenizer-type is ${name}, which is not set here"
    if kind is not None and given is None:
        raise MegatronArgsError(f"--vocab-size: the vocabulary of --tokenizer-type {kind} is not known to check; add "
                                "--vocab-size N")
    return given, None
