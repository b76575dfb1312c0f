"""Vocabulary sizes of the HuggingFace tokenizers that launch scripts and Primus experiments name by repository.

Why its own module: Primus (AMD-AGI/Primus @ fd1eeabb) names a tokenizer in most of its model files
(primus/configs/models/megatron/*.yaml: `tokenizer_type: Llama3Tokenizer`, `tokenizer_model:
meta-llama/Llama-3.1-405B`) and never a vocabulary size, so without this table `check` refuses 64 of its 80
MI300X experiments asking for overrides.vocab_size. Each size is the `vocab_size` of the repository's HF
config.json (https://huggingface.co/<repo>/blob/main/config.json), the embedding rows the published checkpoint
holds; a repository that is a bundled model (constraints/models/hf_configs/*.json) must agree with it
(tests/constraints/megatron/test_tokenizer_vocab.py).

What Megatron pads instead: len(tokenizer) (megatron/core/tokenizers/text/libraries/huggingface_tokenizer.py
@ d98e8a64 `vocab_size` returns len(self.tokenizer); Primus's build_tokenizer pads that to a multiple of
make_vocab_size_divisible_by x TP, primus/backends/megatron/training/tokenizer/tokenizer.py). For Llama 2/3,
Mixtral the two are equal; Qwen and DeepSeek configs are padded above their tokenizers (Qwen2.5: len(tokenizer)
151,665 against 151,936 / 152,064, github.com/arcee-ai/mergekit/issues/425; DeepSeekMoE 16B: 100,015 against the
102,400 that DeepSeek-V2 configs also state, github.com/deepseek-ai/DeepSeek-MoE/issues/14). The tokenizer files
are not read here, so the config's count is used and the note says so: the embedding, output layer and logits it
implies are an upper bound (0.2-0.3 % of the vocabulary for Qwen2.5, 2.4 % for DeepSeekMoE's tokenizer).

Tokenizer types that load a HuggingFace tokenizer from --tokenizer-model: Megatron's HuggingFaceTokenizer (and
its SentencePiece-file kinds, constraints/megatron/vocab.py), and Primus's CUSTOM_TOKENIZER_TYPES (tokenizer.py
above: each is built as a HuggingFaceTokenizer from tokenizer_model).
"""
from __future__ import annotations

import re
from typing import Optional

# Primus's CUSTOM_TOKENIZER_TYPES (besides HuggingFaceTokenizer and Llama2Tokenizer, which Megatron also knows)
PRIMUS_HF_TOKENIZERS = ("DeepSeekV2Tokenizer", "DeepSeekV3Tokenizer", "DeepSeekV4Tokenizer", "Llama3Tokenizer",
                        "MixtralTokenizer", "Llama4Tokenizer", "Lfm2Tokenizer", "KimiK2Tokenizer")

# HF repository -> config.json vocab_size (source: that repository's config.json, module docstring)
HF_CONFIG_VOCAB: dict[str, int] = {
    # Llama 3 tokenizer (128,000 BPE tokens + 256 special tokens)
    "meta-llama/Meta-Llama-3-8B": 128256, "meta-llama/Meta-Llama-3-70B": 128256,
    "meta-llama/Llama-3.1-8B": 128256, "meta-llama/Llama-3.1-70B": 128256, "meta-llama/Llama-3.1-405B": 128256,
    "meta-llama/Llama-3.2-1B": 128256, "meta-llama/Llama-3.2-3B": 128256,
    "meta-llama/Llama-3.3-70B-Instruct": 128256,
    "NousResearch/Meta-Llama-3-8B": 128256,  # a mirror of meta-llama/Meta-Llama-3-8B
    # Llama 2 and Mixtral v0.1 SentencePiece tokenizers
    "meta-llama/Llama-2-7b-hf": 32000, "meta-llama/Llama-2-13b-hf": 32000, "meta-llama/Llama-2-70b-hf": 32000,
    "mistralai/Mixtral-8x7B-v0.1": 32000, "mistralai/Mixtral-8x22B-v0.1": 32000,
    # Llama 4
    "meta-llama/Llama-4-Scout-17B-16E": 202048, "meta-llama/Llama-4-Maverick-17B-128E": 202048,
    # DeepSeek
    "deepseek-ai/DeepSeek-V2": 102400, "deepseek-ai/DeepSeek-V2-Lite": 102400, "deepseek-ai/DeepSeek-V3": 129280,
    # Qwen2.5: 151,936 below 7B, 152,064 from 7B (Qwen's configs)
    "Qwen/Qwen2.5-3B": 151936, "Qwen/Qwen2.5-7B": 152064, "Qwen/Qwen2.5-14B": 152064, "Qwen/Qwen2.5-32B": 152064,
    "Qwen/Qwen2.5-72B": 152064,
    "deepseek-ai/DeepSeek-R1-Distill-Qwen-1.5B": 151936, "deepseek-ai/DeepSeek-R1-Distill-Qwen-14B": 152064,
    # Qwen3 (dense and MoE)
    "Qwen/Qwen3-4B": 151936, "Qwen/Qwen3-8B": 151936, "Qwen/Qwen3-14B": 151936, "Qwen/Qwen3-32B": 151936,
    "Qwen/Qwen3-30B-A3B": 151936, "Qwen/Qwen3-235B-A22B": 151936,
    # Kimi K2
    "moonshotai/Kimi-K2-Instruct": 163840,
}

# Primus spells two Llama 3.2 repositories with the older "Meta-" prefix (primus/configs/models/megatron/llama3.2_*.yaml);
# the HF repositories are meta-llama/Llama-3.2-1B / -3B
_ALIASES = {"meta-llama/Meta-Llama-3.2-1B": "meta-llama/Llama-3.2-1B",
            "meta-llama/Meta-Llama-3.2-3B": "meta-llama/Llama-3.2-3B"}
_BY_NAME = {repo.split("/")[1].lower(): repo for repo in HF_CONFIG_VOCAB}
_BY_NAME.update({alias.split("/")[1].lower(): repo for alias, repo in _ALIASES.items()})


def hf_repo_vocab(tokenizer_model: str) -> Optional[tuple[str, int]]:
    """(HF repository, its config vocab_size) for a --tokenizer-model value: a repository id, or a local path whose
    last folder is the repository's name (`/ckpt/Qwen2.5-7B/`); None when the table does not hold it."""
    parts = [p for p in re.split(r"[/\\]", tokenizer_model.strip()) if p]
    if not parts:
        return None
    repo = _BY_NAME.get(parts[-1].lower())
    return (repo, HF_CONFIG_VOCAB[repo]) if repo is not None else None
