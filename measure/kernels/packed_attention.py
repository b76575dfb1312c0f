"""Attention over packed sequences: score pairs computed inside each packed document, not across the whole sample.

Why: supervised fine-tuning packs several short examples into one sample of `seq_length` tokens (NeMo / Megatron-Bridge
packed SFT: "multiple training sequences (examples) are concatenated into one long sequence (pack)", NeMo Framework
user guide 25.02, sft_peft/packed_sequence.html; the pack is passed as THD with `cu_seqlens`, and attention "is
restricted to each sub-sequence", the same page). A varlen flash-attention kernel then tiles each sub-sequence on its
own, so a sample of S tokens made of documents of mean length L computes about S / L causal triangles of L, not one of
S: a fraction ~L / S of the pairs (tile-granular, constraints/models/window.py `tile_pairs`). The GEMMs, norms and
communication see the same S tokens either way, so only core attention changes.

Equal-length documents are assumed (the mean is what a dataset's description gives): documents of spread lengths
compute more pairs (the mean of l^2 exceeds the square of the mean), so this is a lower bound on the attention time.
"""
from __future__ import annotations

from constraints.models.window import tile_pairs
from constraints.spec import JobSpec


def packed_pair_fraction(job: JobSpec) -> float:
    """Score pairs a packed sample computes over those of one causal sequence of `job.seq_length`; 1.0 unpacked."""
    seq, doc = job.seq_length, job.packed_mean_tokens
    if doc is None or doc >= seq:
        return 1.0
    whole, rest = divmod(seq, doc)
    return (whole * tile_pairs(doc, None) + (tile_pairs(rest, None) if rest else 0)) / tile_pairs(seq, None)
