"""project(): consistency of its outputs, cost-table precedence, and error over runs.csv."""
import statistics

import pytest

from bench.runs import load_all
from bench.validate_projection import assume_moe_dispatcher, evaluate
from constraints.models.load import load_model
from constraints.spec import JobSpec, Placement, Precision, Recipe, Recompute, RecomputeMethod
from hardware.profile import load_profile
from measure.projection.flops import flops_per_iteration
from measure.projection.project import project

H100 = load_profile("h100-sxm-80gb")
LLAMA = load_model("Llama-3.1-70B")
JOB = JobSpec(seq_length=8192, global_batch_size=128, precision=Precision.fp8_tensorwise)
PLACE = Placement(hardware="h100-sxm-80gb", num_nodes=8, gpus_per_node=8)
RECIPE = Recipe(tp=4, pp=4, vpp=5, sequence_parallel=True, schedule="interleaved")


def test_outputs_agree_with_each_other():
    p = project(LLAMA, JOB, RECIPE, PLACE, H100)
    tokens = 128 * 8192
    assert p.tokens_per_s_per_gpu == pytest.approx(tokens / p.iteration_time_s / 64)
    assert p.mfu == pytest.approx(flops_per_iteration(LLAMA, JOB, RECIPE) / (p.iteration_time_s * 64 * 989.4e12))
    assert sum(p.breakdown.model_dump().values()) == pytest.approx(p.iteration_time_s, rel=1e-6)
    assert 0 < p.bubble_fraction < 0.5


def test_recompute_and_fp8_move_time_the_right_way():
    base = project(LLAMA, JOB, RECIPE, PLACE, H100)
    full = project(LLAMA, JOB, RECIPE.model_copy(update={"recompute": Recompute.full(RecomputeMethod.uniform, 1)}), PLACE, H100)
    bf16 = project(LLAMA, JOB.model_copy(update={"precision": Precision.bf16}), RECIPE, PLACE, H100)
    assert full.iteration_time_s > base.iteration_time_s and full.breakdown.recompute > 0
    assert bf16.iteration_time_s > base.iteration_time_s


class _Table:
    def __init__(self, seconds):
        self.seconds = seconds

    def fingerprints(self):
        return ["dev"]

    def lookup(self, fingerprint, op_key):
        return self.seconds if op_key.startswith("fwd/gemm") else None


def test_measured_entries_take_precedence():
    slow = project(LLAMA, JOB, RECIPE, PLACE, H100, cost_table=_Table(1e-2))
    base = project(LLAMA, JOB, RECIPE, PLACE, H100)
    assert slow.iteration_time_s > 2 * base.iteration_time_s


def test_closed_form_ranks_close_to_simulation():
    a = project(LLAMA, JOB, RECIPE, PLACE, H100, simulate_pipeline=True)
    b = project(LLAMA, JOB, RECIPE, PLACE, H100, simulate_pipeline=False)
    assert b.iteration_time_s == pytest.approx(a.iteration_time_s, rel=0.05)


def test_error_over_runs_csv_stays_bounded():
    """Regression guard on the whole development set, in sample (the software constants are fitted on every row)."""
    cases, _ = load_all()
    errs = [abs(r["err_tokens_per_s_per_gpu"]) for r in evaluate(assume_moe_dispatcher(cases)) if "err_tokens_per_s_per_gpu" in r]
    assert len(errs) > 150
    # in sample under the transfer model (per-part microbenchmarks + shared software constants): median 9.1 %, p90 28.0 %
    # over 235 rows (refitted once the casts of fp8 / NVFP4 GEMMs stopped counting as host ops; 9.7 % / 24.5 % before);
    # 11.0 % / 34.0 % over 261 once the 26 Nemotron 3 Super rows joined (they read a median 33 % fast with their
    # recipes' CUDA graphs, before any refit); 10.4 % / 32.2 % over 261 after the refit with them, FP8 attention and the
    # GBS preset match; 9.4 % / 30.3 % over 261 once the two publisher-flagged rows left the fit (refit on the 252 headline
    # rows, bench/run_slices.py); 8.4 % / 30.2 % with gpt-oss's eager RoPE and expert-bias passes priced and refitted;
    # the out-of-sample figures are bench.cross_validate's (README), which CI runs
    assert statistics.median(errs) < 0.115
    assert sorted(errs)[int(0.9 * (len(errs) - 1))] < 0.35
