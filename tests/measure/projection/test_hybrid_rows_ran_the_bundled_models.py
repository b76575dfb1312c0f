"""The Nemotron 3 rows of the Megatron-Bridge performance summary ran the models shardplan bundles: the publisher's own
model FLOPs per token (its TFLOP/s/GPU over its tokens/s/GPU, both published per row) equal Megatron's count for the
bundled configs, with the two MTP depths the Bridge recipes train Nemotron 3 Super with (bench/runs.py
BRIDGE_MODEL_TRAINING). A model other than the one run (another Mamba head count or state size, another latent width
or expert count, another MTP depth) would show here as a gap, so the hybrid slice's error is not a model-definition
error (docs/model-families.md, "Hybrid Mamba-2 / attention models")."""
import statistics

import pytest

from bench.runs import load_runs
from measure.kernels.layer_ops import padded_vocab
from measure.projection.flops import flops_per_token


def _summary_rows(model_name: str):
    """(case, published FLOPs per token) of every performance-summary row of this bundled model."""
    rows = []
    for c in load_runs():
        me = c.measured
        if c.id.startswith("MBR-") and c.model.name == model_name and "tflops_per_gpu" in me:
            rows.append((c, me["tflops_per_gpu"] * 1e12 / me["tokens_per_s_per_gpu"]))
    return rows


@pytest.mark.parametrize("model_name,rows_at_least,published_gflop", [
    # medians of the published TFLOP/s over tokens/s of the rows: 84.7 GFLOP/token (Super, 8k), 22.3 (Nano, 8k)
    ("Nemotron-3-Super-120B-A12B", 20, 84.7),
    ("Nemotron-3-Nano-30B-A3B", 10, 22.3),
])
def test_every_summary_row_publishes_the_bundled_models_flops(model_name, rows_at_least, published_gflop):
    rows = _summary_rows(model_name)
    assert len(rows) >= rows_at_least
    assert statistics.median(pub for _, pub in rows) / 1e9 == pytest.approx(published_gflop, abs=0.05)
    for c, pub in rows:  # each row within its own rounding (TFLOP/s published to 3-4 digits)
        ours = flops_per_token(c.model, c.job.seq_length, padded_vocab(c.model, c.recipe))
        assert ours == pytest.approx(pub, rel=0.013), c.id


def test_super_rows_ran_two_mtp_depths_not_the_hf_configs_one():
    """The HF config has one MTP layer (num_nextn_predict_layers 1); the Bridge recipes train two depths through it
    (mtp_num_layers 2, mtp_use_repeated_layer). Each depth adds an attention + MoE layer ('*E') and an output head:
    at one depth Megatron's count would be 80.0 GFLOP/token, 5.5 % under every published row."""
    rows = _summary_rows("Nemotron-3-Super-120B-A12B")
    c, _ = rows[0]
    assert c.model.mtp_num_layers == 2
    one_depth = c.model.model_copy(update={"mtp_num_layers": 1})
    vocab = padded_vocab(c.model, c.recipe)
    assert flops_per_token(one_depth, 8192, vocab) / 1e9 == pytest.approx(80.05, abs=0.01)
    assert all(flops_per_token(one_depth, 8192, vocab) < 0.96 * pub for _, pub in rows)
