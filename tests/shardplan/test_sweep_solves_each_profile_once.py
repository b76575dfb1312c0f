"""`sweep --hardware h100-sxm-80gb,h100-sxm-80gb` (or the name again in other case) solved and listed the part twice,
where repeated node counts were already taken once (found by QA). Each profile is now swept once, in the order first
named."""
from __future__ import annotations

import shardplan


def test_a_profile_named_twice_is_swept_once():
    res = shardplan.sweep("Llama-3.1-8B", "h100-sxm-80gb,H100-SXM-80GB", [1], seq_length=4096, global_batch_size=64)
    assert [p.hardware for p in res.points] == ["h100-sxm-80gb"]
