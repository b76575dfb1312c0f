"""bench/runs.py reads how a row routed its experts and whether its samples were packed, from the row's own notes."""
from __future__ import annotations

from bench.runs import load_runs, packed_mean_tokens


def test_the_cards_functional_run_routes_naturally():
    cases = {c.id: c for c in load_runs()}
    # the Bridge card's functional `pretrain` run says "Natural routing"; its tuned performance run forces balance
    assert cases["MBCARD-499"].natural_routing and not cases["MBCARD-501"].natural_routing
    assert cases["MBCARD-499"].run_options()["natural_routing"]


def test_packed_sft_rows_carry_their_datasets_mean_document():
    """NeMo's SFT performance rows ("SQuAD packed to 4096") are packed; their pretraining twins are not."""
    assert packed_mean_tokens("task=SFT (SQuAD packed to 4096); dp derived", 4096) == 240
    assert packed_mean_tokens("task=SFT (SQuAD packed to 4096)", 8192) is None  # packed to another length: not this row
    cases = {c.id: c for c in load_runs()}
    assert cases["NEMO2407-320"].job.packed_mean_tokens == 240
    assert cases["NEMO2407-300"].job.packed_mean_tokens is None
