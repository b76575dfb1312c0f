"""A lower GEMM precision is never projected slower than bf16 on the same recipe, and the published same-recipe
precision pairs keep their order.

Why: quantising a GEMM's inputs adds cast kernels, but Transformer Engine launches them inside the GEMM's own module
call, so they add device time only (and a little of it), never a framework call of their own. Counting them as
host-issued ops once made MXFP8 and NVFP4 slower than bf16 on Llama-3.1-70B at TP 8 on B200 (host-bound layers).
"""
from __future__ import annotations

import pytest

from bench.run_slices import throughput_cases
from constraints.case import load_case_yaml
from hardware.profile import load_profile
from measure.projection.project import project
from tests.helpers.builders import REPO

EXAMPLE = REPO / "constraints" / "examples" / "llama3-70b-h100.yaml"


def _step_s(case, precision: str, hardware: str) -> float:
    job = case.job.model_validate({**case.job.model_dump(), "precision": precision})
    return project(case.model, job, case.recipe, case.placement, load_profile(hardware)).iteration_time_s


@pytest.mark.parametrize("hardware,low", [("h100-sxm-80gb", "fp8-tensorwise"), ("b200", "mxfp8"), ("b200", "nvfp4"),
                                          ("gb300-nvl72", "nvfp4"), ("gb300-nvl72", "fp8-tensorwise")])
def test_a_lower_precision_is_not_slower_on_the_same_recipe(hardware, low):
    case = load_case_yaml(EXAMPLE)
    assert _step_s(case, low, hardware) <= _step_s(case, "bf16", hardware)


# Megatron-Bridge performance summary (bench/data/runs.csv): Llama-3.1-70B on 64 GPUs, the same recipe in MXFP8 and
# NVFP4, measured 3,712 -> 4,864 tokens/s/GPU on GB200 (+31 %) and 4,864 -> 7,296 on GB300 (+50 %)
PAIRS = [("MBR-078", "MBR-079"), ("MBR-075", "MBR-076")]


@pytest.mark.parametrize("mxfp8_id,nvfp4_id", PAIRS)
def test_published_mxfp8_nvfp4_pairs_keep_their_order(mxfp8_id, nvfp4_id):
    by_id = {c.id: c for c in throughput_cases()}
    slow, fast = by_id[mxfp8_id], by_id[nvfp4_id]
    assert slow.measured["tokens_per_s_per_gpu"] * 1.3 < fast.measured["tokens_per_s_per_gpu"]

    def tps(c):
        return project(c.model, c.job, c.recipe, c.placement, load_profile(c.hardware),
                       cuda_graph_scope=c.cuda_graph_scope).tokens_per_s_per_gpu

    assert tps(slow) * 1.15 < tps(fast)
