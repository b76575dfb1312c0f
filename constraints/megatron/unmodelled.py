"""Megatron flag values shardplan does not model and that change what a verdict would say: refused by name.

Why its own module: a flag whose value changes memory or numerics in a way the memory model does not count
must never be judged as if it were absent. Each such value is one line naming the flag and the fix (exit 2,
unusable input), so no verdict is given for a recipe shardplan would misjudge. (NVFP4's --fp4-* flags are
modelled: constraints/megatron/job.py, rules_fp4.py; the unfused attention backends' s x s scores are
modelled: constraints/memory/attention_scores.py.) Values that have no effect in their context are left alone.
Sources: megatron/training/arguments.py @ d98e8a64 (choices and defaults named below).
"""
from __future__ import annotations

from typing import Any

from constraints.megatron.errors import MegatronArgsError

# --attention-backend choices (AttnBackend: flash, fused, unfused, local, auto; default auto). unfused and local store
# the s x s scores (constraints/memory/attention_scores.py) for a standard attention; what they keep beside a latent (MLA)
# attention or an off-by-one softmax offset (a sink column of zeros) has not been worked out from the source.
_SCORE_BACKENDS = ("unfused", "local")


def not_modelled_values(raw: dict[str, Any]) -> list[str]:
    """Entries for the not-understood list; raises MegatronArgsError for values that would change the verdict."""
    out = []
    # --transformer-impl (TransformerConfig.transformer_impl: local, transformer_engine, inference_optimized;
    # megatron/core/transformer/transformer_config.py:1314 @d98e8a64): local and transformer_engine are modelled
    # (Recipe.local_transformer_impl); the inference-optimized modules are an inference spec, not priced
    impl = raw.get("--transformer-impl")
    if impl not in (None, "local", "transformer_engine"):
        out.append(f"--transformer-impl {impl}")
    backend = raw.get("--attention-backend")
    if backend in _SCORE_BACKENDS:
        if raw.get("--multi-latent-attention"):
            raise MegatronArgsError(f"--attention-backend {backend} with --multi-latent-attention: the unfused scores "
                                    "of a latent attention are not modelled; drop --attention-backend (auto picks a "
                                    "fused kernel) to judge the fused recipe")
        if raw.get("--softmax-type") == "off-by-one":
            raise MegatronArgsError(f"--attention-backend {backend} with --softmax-type off-by-one is not modelled; "
                                    "drop --attention-backend (auto picks a fused kernel) to judge the fused recipe")
    return out


# Flags that move memory off the GPU or shrink a buffer, none of which the memory model counts: with one of them the
# exact peak `check` prints is the peak without it, an upper bound of what the run holds (arguments.py @ d98e8a64:
# fine-grained activation offloading and its module list / fraction, the optimizer's CPU offload, MXFP8 parameter
# all-gather into the gradient buffer, fp16 / bf16 main parameters, the MoE paged stash)
MEMORY_LOWERING_FLAGS = ("--fine-grained-activation-offloading", "--offload-modules", "--activation-offload-fraction",
                         "--optimizer-cpu-offload", "--optimizer-offload-fraction", "--reuse-grad-buf-for-mxfp8-param-ag",
                         "--main-params-dtype", "--moe-paged-stash")


def memory_lowering_flags(raw: dict[str, Any]) -> list[str]:
    """The MEMORY_LOWERING_FLAGS a parsed command line sets (a `--main-params-dtype fp32`, the default, lowers nothing)."""
    return [f for f in MEMORY_LOWERING_FLAGS
            if raw.get(f) not in (None, False, 0, 0.0, []) and not (f == "--main-params-dtype" and raw.get(f) == "fp32")]


# Flags that allocate memory the memory model does not count, so the exact peak `check` prints is below the run's: each
# is named in a warning "memory of X is not modelled: the peak may be low" (shardplan/verdict.py). Sources @ d98e8a64:
# --tp-comm-overlap-cfg FILE: TE's userbuffers are priced at TE's default per-GEMM configuration
# (constraints/memory/userbuffers.py); a user configuration can give a reduce-scatter GEMM a ring-exchange buffer of
# 2 x TP - 1 chunks or an fp8 pipeline buffer (transformer_engine/pytorch/module/base.py:560-569 @d0067d0d), which
# the file (not read) would say.
# The MoE all-gather token dispatcher (--moe-token-dispatcher-type allgather, Megatron's default) gathers every token,
# its routing map and its fp32 probabilities over TP x EP (megatron/core/transformer/moe/token_dispatcher.py:281-303,
# the tokens into the persistent global memory buffer), keeps per layer the local routing map and the permutation
# indices for backward (:305-334), and casts the unpermuted TP x EP-wide tokens to fp32 for the reduce-scatter (:356-360);
# the model prices the routed tokens of a balanced all-to-all only (constraints/memory/activations.py mlp_terms), and
# Megatron-LM's MoE functional tests on this dispatcher measure 8-25 % above it (bench/megatron_golden/compare.py).
MEMORY_RAISING_FLAGS = ("--tp-comm-overlap-cfg",)


def memory_raising_flags(raw: dict[str, Any]) -> list[str]:
    """The MEMORY_RAISING_FLAGS a parsed command line sets, and the MoE all-gather dispatcher where it is used."""
    named = [f for f in MEMORY_RAISING_FLAGS if raw.get(f) not in (None, False, 0, 0.0, [])
             and (f != "--tp-comm-overlap-cfg" or raw.get("--tp-comm-overlap"))]  # the file matters only with the overlap
    if raw.get("--num-experts") and raw.get("--moe-token-dispatcher-type", "allgather") == "allgather":
        named.append("--moe-token-dispatcher-type allgather")
    if raw.get("--cross-entropy-loss-fusion") and "--cross-entropy-fusion-impl" not in raw:
        # Megatron's default impl is native, torch.compile'd: a second fp32 logits buffer (constraints/memory/
        # activations.py output_bytes), counted only when --cross-entropy-fusion-impl native is stated
        named.append("--cross-entropy-loss-fusion without --cross-entropy-fusion-impl (native: add it to count it)")
    return named
