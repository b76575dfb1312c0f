"""A measured cost table in hardware/measured/<profile>.json (what bench/gpu_check.sh writes through
`shardplan measure`) replaces the analytic op times in every projection of that profile, scalar and vectorised;
the published reconstructions shipped there cite their source and hold the published numbers."""
import pytest

import measure.kernels.measured_tables as mt
from bench.published.tables import PUBLISHED, build
from constraints.models.load import load_model
from constraints.spec import JobSpec, Placement, Precision, Recipe
from hardware.profile import load_profile
from measure.kernels.cost_table import CostTable, Entry, Environment
from measure.kernels.layer_ops import LayerKind, layer_ops
from measure.projection.project import project
from measure.projection.recipe_batch import RecipeBatch
from measure.projection.vectorized import Evaluator

H100 = load_profile("h100-sxm-80gb")
MODEL = load_model("Llama-3.1-8B")
JOB = JobSpec(seq_length=4096, global_batch_size=32, precision=Precision.bf16)
PLACE = Placement(hardware="h100-sxm-80gb", num_nodes=1, gpus_per_node=8)
RECIPE = Recipe(tp=2, pp=1, sequence_parallel=True)


def _slow_gemm_table(factor_s: float) -> CostTable:
    """Every GEMM of the dense layer measured at `factor_s` seconds (a deliberately slow device)."""
    table = CostTable()
    env = Environment(device_name="NVIDIA H100 80GB HBM3", device_type="cuda", compute_capability="9.0", torch_version="2.13.0", host="test")
    for pop in layer_ops(MODEL, JOB, RECIPE, LayerKind.dense):
        if pop.op.kind.value == "gemm":
            table.add("cuda:NVIDIA H100 80GB HBM3:sm90:torch2.13.0", pop.key,
                      Entry(median_s=factor_s, num_reps=10, spread_s=0.0, dtype_used="bf16"), environment=env)
    return table


def test_bundled_measured_table_overrides_the_roofline(tmp_path, monkeypatch):
    monkeypatch.setattr(mt, "MEASURED_DIR", tmp_path)  # empty: roofline only
    analytic = project(MODEL, JOB, RECIPE, PLACE, H100)
    table = _slow_gemm_table(5e-3)
    table.save(tmp_path / "h100-sxm-80gb.json")
    bundled = project(MODEL, JOB, RECIPE, PLACE, H100)
    explicit = project(MODEL, JOB, RECIPE, PLACE, H100, cost_table=table)
    # 32 layers x 4 GEMMs x 5 ms per micro-batch forward alone is far above the analytic step
    assert bundled.iteration_time_s > 2 * analytic.iteration_time_s
    assert bundled.iteration_time_s == pytest.approx(explicit.iteration_time_s, rel=1e-12)
    # bench/gpu_step.py's roofline-only comparison still gets the analytic times
    roofline = project(MODEL, JOB, RECIPE, PLACE, H100, cost_table=mt.ROOFLINE_ONLY)
    assert roofline.iteration_time_s == pytest.approx(analytic.iteration_time_s, rel=1e-12)


def test_vectorised_evaluator_reads_the_same_bundled_table(tmp_path, monkeypatch):
    monkeypatch.setattr(mt, "MEASURED_DIR", tmp_path)
    batch = RecipeBatch.from_recipes([RECIPE])
    analytic = Evaluator(MODEL, JOB, PLACE, H100).evaluate(batch)["iteration_time_s"][0]
    _slow_gemm_table(5e-3).save(tmp_path / "h100-sxm-80gb.json")
    measured = Evaluator(MODEL, JOB, PLACE, H100).evaluate(batch)["iteration_time_s"][0]
    assert measured > 2 * analytic


def test_shipped_published_tables_hold_the_published_matmul_rates():
    for profile in PUBLISHED:
        table, fp = mt.bundled_table(profile)
        assert table is not None and fp.startswith("published:"), profile
        assert table == build(profile)
        for key, entry in table.devices[fp].entries.items():
            m, n, k = (int(x) for x in key.split(":")[1].split("x"))
            tflops = 2 * m * n * k / entry.median_s / 1e12
            assert "stas00/ml-engineering" in entry.source and f"{tflops:.1f}" in entry.source
    # H100 SXM bf16: 794.5 TFLOP/s at 2048x2048x13312 (the published row), i.e. 0.1406 ms
    table, fp = mt.bundled_table("h100-sxm-80gb")
    assert table.lookup(fp, "fwd/gemm:2048x2048x13312:bf16") == pytest.approx(2 * 2048 * 2048 * 13312 / 794.5e12)
