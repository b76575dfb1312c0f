"""Flash attention's time by the score tiles it visits: each query tile costs its key tiles plus a fixed share.

Why: a fused attention kernel walks, for every 128-row query tile, the key tiles its mask leaves (one tile step each),
and before and after the walk loads Q and writes the output and the log-sum-exp, work that does not shrink with the
mask. A sliding window of 128 leaves each query tile two key tiles (constraints/models/window.py tile_pairs), so that
fixed work is a third of the windowed kernel's time, where at 8k of full causal attention it is 3 %. Pricing a
window's kernel by its FLOPs at the rate of a long full-causal kernel (what the part's attention microbenchmark is)
makes it too cheap; so does pricing a short sequence's attention at the 8k rate.

Time per sequence and head, in tile steps: sum over query tiles of (key tiles + c), c = QUERY_TILE_FIXED_STEPS.
For full causal attention over n = s / 128 query tiles this is n (n + 1) / 2 + c n, so the achieved rate in causal
FLOPs (s^2 / 2 score pairs) is R n / (n + 1 + 2 c).

Source of c: FlashAttention-3 (Shah et al. 2024, arXiv 2407.08608) Fig. 5, H100 80GB SXM5, causal forward, head
dim 64, batch x sequence = 16k tokens: cuDNN 225 / 288 / 334 / 363 / 379 / 388 TFLOP/s at sequence 512 / 1k / 2k /
4k / 8k / 16k. R n / (n + 1 + 2c) reproduces all six within 0.7 % at c = 1.0 (R = 397); FlashAttention-2 in the same
figure (180 ... 299) fits within 0.7 % at c = 0.9. cuDNN's fused attention is what Transformer Engine runs on Hopper
and later whenever it is available ("Disabling FlashAttention to give FusedAttention preference on Hopper+",
transformer_engine/pytorch/attention/dot_product_attention/utils.py:1647-1653 @ d0067d0d), and the only fused kernel
it runs for gpt-oss's learnable sinks ("Disabling FlashAttention for softmax_type = ...", the same file :1122-1124;
cuDNN 9.13.1+ takes sinks and causal sliding windows: transformer_engine/common/fused_attn/fused_attn.cpp:432-475);
FlashAttention-2 is A100's. The backward walks key tiles over query tiles with the same fixed load / store work per
outer tile; it takes the same c (no causal backward figure is published there).

The parts' attention microbenchmarks are in-step rates of full causal attention at 8k (hardware/profiles/*.yaml
`microbench.attention_fraction`; A100's FlashAttention-2 abstract figure names no length and is read the same way), so
the factor is 1 there: attention is priced at the microbenchmark's rate times the ratio of tile steps per priced FLOP.
Context parallelism splits the same tiles over ranks (load-balanced halves); the ring's per-step kernel calls
are not counted here.
"""
from __future__ import annotations

from constraints.models.window import ATTENTION_TILE, mean_pair_fraction, tile_pairs, window_flags
from constraints.spec import ModelSpec

# fixed work per query tile (Q load, output and log-sum-exp store), in key-tile steps: see the module docstring
QUERY_TILE_FIXED_STEPS = 1.0
# sequence length of the parts' attention microbenchmarks (step decomposition @ 8k, hardware/profiles/*.yaml)
REFERENCE_SEQ_TOKENS = 8192


def _steps_per_priced_pair(seq: int, pair_fraction: float, mean_blocks: float) -> float:
    """Tile steps per (query, key) pair the projection prices: it prices s^2 / 2 causal pairs times the layers' mean
    share of computed tiles (constraints/models/window.py mean_pair_fraction)."""
    q_tiles = -(-seq // ATTENTION_TILE)
    priced_pairs = seq * seq / 2 * pair_fraction
    return (mean_blocks + QUERY_TILE_FIXED_STEPS * q_tiles) / priced_pairs


def _full_causal_steps_per_pair(seq: int) -> float:
    return _steps_per_priced_pair(seq, 1.0, tile_pairs(seq, None) / ATTENTION_TILE ** 2)


def query_tile_time_factor(model: ModelSpec, seq: int) -> float:
    """Time of the model's core attention at this sequence over the time its priced FLOPs take at the microbenchmark's
    rate (full causal at REFERENCE_SEQ_TOKENS): 1.0 there, above 1 for shorter sequences and for sliding windows."""
    flags = window_flags(model)
    full_blocks = tile_pairs(seq, None) / ATTENTION_TILE ** 2
    if any(flags):
        windowed_blocks = tile_pairs(seq, model.window_size) / ATTENTION_TILE ** 2
        mean_blocks = (sum(flags) * windowed_blocks + (len(flags) - sum(flags)) * full_blocks) / len(flags)
    else:
        mean_blocks = full_blocks
    steps = _steps_per_priced_pair(seq, mean_pair_fraction(model, seq), mean_blocks)
    return steps / _full_causal_steps_per_pair(REFERENCE_SEQ_TOKENS)
