"""TE's cached fp8 weight copies (constraints/memory/fp8_weight_cache.py): bytes per weight element by recipe and
part (TE float8_tensor.py / utils.py / constants.py @d0067d0d), carried by check and priced equally by the solver."""
from __future__ import annotations

import numpy as np

from constraints.memory.fp8_weight_cache import fp8_weight_cache_bytes
from constraints.memory.per_rank import memory_report
from constraints.models.load import load_model
from constraints.spec import JobSpec, Placement, Precision, Recipe
from hardware.profile import load_profile
from solver.space import build_space
from solver.tables.build import build_tables


def job(precision: Precision) -> JobSpec:
    return JobSpec(seq_length=4096, global_batch_size=16, precision=precision)


def test_bytes_per_element_by_recipe_and_part():
    n = 1_048_576
    assert fp8_weight_cache_bytes(job(Precision.fp8_tensorwise), Recipe(), n, 9.0) == 2 * n    # data + transpose
    assert fp8_weight_cache_bytes(job(Precision.fp8_delayed), Recipe(), n, 10.0) == n          # non-TN: one buffer
    assert fp8_weight_cache_bytes(job(Precision.mxfp8), Recipe(), n, 10.0) == 2 * n + 2 * n // 32
    assert fp8_weight_cache_bytes(job(Precision.fp8_blockwise), Recipe(), n, 9.0) == 2 * n + 2 * 4 * 64
    assert fp8_weight_cache_bytes(job(Precision.bf16), Recipe(), n, 9.0) == 0
    assert fp8_weight_cache_bytes(job(Precision.fp8_tensorwise), Recipe(fp8_param_gather=True), n, 9.0) == 0
    assert fp8_weight_cache_bytes(job(Precision.fp8_tensorwise), Recipe(), n, None) == 0      # no TE on AMD here


def test_check_counts_the_decoder_linear_weights():
    model = load_model("Llama-3.1-8B")
    report = memory_report(model, job(Precision.fp8_tensorwise), Recipe(tp=2, sequence_parallel=True), 8, 80 * 1024 ** 3,
                           compute_capability=9.0)
    # Llama-3.1-8B decoder linears per layer: QKV 4096 x 6144, proj 4096 x 4096, fc1 4096 x 28672, fc2 14336 x 4096;
    # 32 layers, split over TP 2, 2 B per element on Hopper
    per_layer = 4096 * 6144 + 4096 * 4096 + 4096 * 28672 + 14336 * 4096
    assert report.terms["fp8_weight_cache"] == 2 * 32 * per_layer // 2


def test_solver_tables_price_the_cache_as_check_does():
    hw = "h100-sxm-80gb"
    space = build_space(load_model("Llama-3.1-8B"), job(Precision.fp8_tensorwise),
                        Placement(hardware=hw, num_nodes=1, gpus_per_node=8),
                        pins={"tp": [1, 2], "pp": [1, 2, 4], "vpp": [1], "cp": [1], "mbs": [1]})
    tables = build_tables(space, load_profile(hw), 0.0)
    prof = tables.profile
    for i in np.linspace(0, len(tables.cand_act) - 1, 25).astype(int):
        recipe = tables.recipe(int(tables.cand_act[i]), int(tables.cand_shard[i]))
        report = memory_report(space.model, space.job, recipe, 8, prof.hbm_capacity_bytes,
                               prof.calibration.framework_overhead_bytes, prof.calibration.activation_fragmentation_fraction,
                               compute_capability=prof.compute_capability)
        assert report.terms["fp8_weight_cache"] > 0
        assert report.peak_bytes == int(tables.cand_peak[i])
