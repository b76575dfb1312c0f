"""How bench/runs.py reads Megatron-Bridge rows for memory: performance recipes reduce grads in bf16, Bridge logs
memory in decimal GB, and the held-out Moonlight study (bench/data/memory_runs.csv) loads with its recompute modules.
Sources are cited in bench/runs.py (BRIDGE_PERF_SOURCE, BRIDGE_LOGGED_MEMORY) and bench/data/SOURCES.md."""
import pytest

from bench.runs import MEMORY_CSV, RUNS_CSV, load_all
from constraints.spec import RecomputeModule


@pytest.fixture(scope="module")
def rows():
    return {c.id: c for path in (RUNS_CSV, MEMORY_CSV) for c in load_all(path)[0]}


def test_bridge_performance_recipe_rows_take_bf16_grads(rows):
    perf = [c for c in rows.values() if c.id.startswith(("MBR-", "MBSKILL-"))]
    assert perf and all(c.recipe.grad_reduce_in_bf16 for c in perf)
    nemo = [c for c in rows.values() if c.id.startswith(("NEMO2", "AUTOMODEL"))]
    assert nemo and not any(c.recipe.grad_reduce_in_bf16 for c in nemo)


def test_bridge_logged_peaks_are_decimal_gigabytes(rows):
    # MBCARD-501 / MBSKILL-537: Qwen3-30B-A3B card, 62.166 "GB" = torch allocated_bytes.all.peak / 1e9
    assert rows["MBSKILL-537"].measured["mem_per_gpu_gib"] == pytest.approx(62.166e9 / 2 ** 30)
    assert rows["MBCARD-501"].measured["mem_per_gpu_gib"] == pytest.approx(62.166e9 / 2 ** 30)


def test_moonlight_study_rows_load_with_their_recompute_modules(rows):
    study = {k: c for k, c in rows.items() if c.model.name == "Moonlight-16B-A3B" and "mem_per_gpu_gib" in c.measured}
    assert len(study) == 6
    mods = {tuple(sorted(m.value for m in c.recipe.recompute.modules)) for c in study.values()}
    assert mods == {(), ("core_attn",), ("mla_up_proj",), ("mla_up_proj", "mlp"), ("moe_act",), ("layernorm", "moe_act")}
    assert all(c.job.optimizer_moments_bf16 and c.recipe.etp == 1 and c.recipe.ep == 8 for c in study.values())
    assert RecomputeModule.moe_act in rows["MBSKILL-605"].recipe.recompute.modules


def test_bridge_performance_precisions_gather_quantised_weights_as_their_recipes_do(rows):
    """_perf_precision: MXFP8 / FP8-CS keep fp8 weights for the param gather (all releases); NVFP4 gathers NVFP4
    weights from 26.06 on; Nemotron 3 Super's NVFP4 recipe and gpt-oss's recipes turn it off (bench/runs.py)."""
    assert rows["MBSKILL-514"].recipe.fp8_param_gather  # Llama-3.1-70B FP8-CS SFT perf config
    assert rows["MBR-035"].recipe.fp4_param_gather and not rows["MBR-083"].recipe.fp4_param_gather  # 26.06 vs 26.04.01
    assert not any(c.recipe.fp4_param_gather for c in rows.values() if c.model.name.startswith("Nemotron-3-Super"))
    assert not any(c.recipe.fp8_param_gather for c in rows.values() if c.model.name.startswith("gpt-oss"))
    assert not any(c.recipe.fp8_param_gather or c.recipe.fp4_param_gather for c in rows.values() if c.id.startswith("NEMO2"))
