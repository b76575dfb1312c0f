"""The solver's tables price TE's userbuffers (constraints/memory/userbuffers.py) on the rows that overlap TP comm,
exactly as check's memory_report does, so a `--tp-comm-overlap` answer costs what check says."""
from __future__ import annotations

import numpy as np

from constraints.memory.per_rank import memory_report
from constraints.models.load import load_model
from constraints.spec import JobSpec, Placement
from hardware.profile import load_profile
from solver.space import build_space
from solver.tables.build import build_tables


def test_overlapped_rows_carry_the_userbuffers_check_prices():
    hw = "h100-sxm-80gb"
    space = build_space(load_model("Llama-3.1-8B"), JobSpec(seq_length=4096, global_batch_size=16),
                        Placement(hardware=hw, num_nodes=1, gpus_per_node=8),
                        pins={"tp": [2, 4], "pp": [1, 2], "vpp": [1], "cp": [1], "mbs": [1, 2], "sp": [True]})
    tables = build_tables(space, load_profile(hw), 0.0)
    prof = tables.profile
    overlapped = 0
    for i in np.linspace(0, len(tables.cand_act) - 1, 40).astype(int):
        recipe = tables.recipe(int(tables.cand_act[i]), int(tables.cand_shard[i]))
        report = memory_report(space.model, space.job, recipe, 8, prof.hbm_capacity_bytes,
                               prof.calibration.framework_overhead_bytes, prof.calibration.activation_fragmentation_fraction,
                               compute_capability=prof.compute_capability)
        assert report.peak_bytes == int(tables.cand_peak[i])
        if recipe.tp_comm_overlap:
            overlapped += 1
            # 12 bf16 buffers of (seq 4096 x mbs, hidden 4096)
            assert report.terms["userbuffers"] == 12 * 2 * 4096 * recipe.mbs * 4096
    assert overlapped > 0
