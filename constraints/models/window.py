"""Sliding-window attention: which layers use it and what share of a causal attention's score pairs a window keeps.

Why a share and not a per-layer kind: a window changes only core attention's work (the flash kernel skips the score
blocks outside the band; Q, K, V, the saved tensors and the softmax statistics are the same as full attention, so
memory does not change). Megatron applies one `window_size` to the layers `window_attn_skip_freq` marks
(megatron/core/transformer/utils.py is_layer_window_attention, layer numbers from 1: an int N keeps every N-th layer
full, a list marks windowed layers with 1). The projection prices every layer's core attention at the model's mean
pair count (exact for the whole model and for any stage holding whole periods of the pattern, e.g. gpt-oss's
alternation on stages with an even layer count). Megatron's reported FLOPs ignore windows (training.py
transformer_flops), and so does measure/projection/flops.py, to stay comparable with its logs.
"""
from __future__ import annotations

from boundary.errors import ShardplanError
from constraints.spec import MAX_NUM_LAYERS, ModelSpec


def window_flags(model: ModelSpec) -> tuple[bool, ...]:
    """Per layer: does it attend through the sliding window."""
    if model.window_size is None:
        return (False,) * model.num_layers
    return model.window_layers if model.window_layers is not None else (True,) * model.num_layers


def flags_from_skip_freq(freq, num_layers: int) -> tuple[bool, ...]:
    """Megatron's is_layer_window_attention over layers 1..L: int N -> layer % N != 0; list -> its 0/1 entries.
    A layer count past MAX_NUM_LAYERS is refused before the tuple is built (10^9 layers took 3 GB)."""
    if num_layers > MAX_NUM_LAYERS:
        raise ShardplanError(f"num_layers {num_layers:,} is above the {MAX_NUM_LAYERS} layers shardplan models; give "
                             "the model's layer count")
    if isinstance(freq, int):
        return tuple(n % freq != 0 for n in range(1, num_layers + 1))
    return tuple(bool(v) for v in freq)


def causal_pairs(seq: int, window: int | None) -> int:
    """(query, key) pairs a causal mask keeps over a sequence, with a left window W: query i sees min(i, W) + 1 keys."""
    if window is None or window + 1 >= seq:
        return seq * (seq + 1) // 2
    w = window + 1
    return w * (w + 1) // 2 + (seq - w) * w


# FlashAttention works on score tiles of 128 x 128 and skips only tiles the mask empties; a tile the band cuts is
# computed whole (Dao 2023, "FlashAttention-2", sec. 3.1; the same tiling on Hopper/Blackwell kernels)
ATTENTION_TILE = 128


def tile_pairs(seq: int, window: int | None, tile: int = ATTENTION_TILE) -> int:
    """Score pairs a tiled causal kernel computes: tile x tile per (query tile, key tile) block the band touches."""
    n = -(-seq // tile)
    if window is None:
        return n * (n + 1) // 2 * tile * tile
    blocks = 0
    for q in range(n):
        lo = max(q * tile - window, 0) // tile  # first key tile of the band of query tile q
        blocks += q - lo + 1
    return blocks * tile * tile


def mean_pair_fraction(model: ModelSpec, seq: int) -> float:
    """Mean over the layers of (score pairs computed / pairs of full causal attention), tile-granular."""
    flags = window_flags(model)
    if not any(flags):
        return 1.0
    full = tile_pairs(seq, None)
    windowed = tile_pairs(seq, model.window_size)
    return (sum(flags) * windowed + (len(flags) - sum(flags)) * full) / (len(flags) * full)
