"""Iteration 1 peaks without the optimizer's moments (lazy Adam state, constraints/memory/first_step.py).

Published check: Megatron-Bridge's Nemotron 3 Nano H100 study (skills/nemo-mbridge-perf-activation-recompute/SKILL.md
@067f987d) read rank 0's peak after iteration 1 of runs that died in iteration 2: 66.297 GB with no recompute and
62.103 GB with `moe_act` (decimal GB, Bridge's memory metrics). The steady-state peak over-states them by >= 15 %; the
first-iteration peak, moments not yet allocated, is within 8 %."""
import pytest

from bench.runs import RUNS_CSV, load_all
from constraints.memory.first_step import first_iteration_peak_bytes, moment_bytes
from constraints.memory.per_rank import memory_report
from constraints.models.load import load_model
from constraints.spec import JobSpec, Optimizer, Recipe
from hardware.profile import load_profile


def test_moments_are_the_optimizer_state_less_its_fp32_master():
    model, prof = load_model("Llama-3.1-8B"), load_profile("h100-sxm-80gb")
    for optimizer, bf16_moments, share in ((Optimizer.adam, False, (8, 12)), (Optimizer.adam, True, (4, 8)), (Optimizer.muon, False, (4, 8))):
        job = JobSpec(seq_length=4096, global_batch_size=64, optimizer=optimizer, optimizer_moments_bf16=bf16_moments)
        mem = memory_report(model, job, Recipe(tp=2, sequence_parallel=True), 8, prof.hbm_capacity_bytes)
        opt = mem.terms["optimizer_state"]
        assert moment_bytes(mem.terms, job) == opt * share[0] // share[1]
        assert first_iteration_peak_bytes(mem, job) == mem.peak_bytes - moment_bytes(mem.terms, job)


def test_first_iteration_peak_never_below_the_optimizer_step():
    model, prof = load_model("Llama-3.1-8B"), load_profile("h100-sxm-80gb")
    job = JobSpec(seq_length=128, global_batch_size=8)  # tiny activations: the step (all static state) is the peak
    mem = memory_report(model, job, Recipe(), 1, prof.hbm_capacity_bytes)
    static = sum(mem.terms[k] for k in ("weights", "gradients", "optimizer_state", "framework_overhead"))
    assert first_iteration_peak_bytes(mem, job) == static


@pytest.mark.parametrize("row_id, published_gb", [("MBSKILL-529", 66.297), ("MBSKILL-531", 62.103)])
def test_nemotron_nano_peak_after_iteration_one(row_id, published_gb):
    case = next(c for c in load_all(RUNS_CSV)[0] if c.id == row_id)
    assert case.memory_after_first_iteration and case.recipe.grad_reduce_in_bf16
    prof = load_profile(case.hardware)
    overhead = prof.calibration.framework_overhead_bytes
    mem = memory_report(case.model, case.job, case.recipe, case.placement.world_size, prof.hbm_capacity_bytes, overhead)
    first = (first_iteration_peak_bytes(mem, case.job) - overhead) / 1e9
    steady = (mem.peak_bytes - overhead) / 1e9
    assert first == pytest.approx(published_gb, rel=0.08)
    assert steady > 1.15 * published_gb
