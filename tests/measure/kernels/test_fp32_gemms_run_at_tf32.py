"""fp32 training prices its GEMMs at the part's TF32 tensor-core rate (Transformer Engine runs pure-fp32 GEMMs with
CUBLAS_COMPUTE_32F_FAST_TF32: transformer_engine/common/gemm/cublaslt_gemm.cu) and its unfused core attention at the
fp32 rate; the rates come from the profiles' datasheet figures."""
import pytest

from constraints.spec import JobSpec
from hardware.profile import available_profiles, load_profile
from measure.kernels.common import act_dtype, gemm_dtype, unquantised_gemm_dtype
from measure.kernels.roofline import peak_flops


def test_fp32_jobs_run_gemms_in_tf32_and_attention_in_fp32():
    job = JobSpec(seq_length=4096, global_batch_size=8, precision="fp32")
    assert (gemm_dtype(job), unquantised_gemm_dtype(job), act_dtype(job)) == ("tf32", "tf32", "fp32")
    bf16 = JobSpec(seq_length=4096, global_batch_size=8, precision="bf16")
    assert (gemm_dtype(bf16), unquantised_gemm_dtype(bf16), act_dtype(bf16)) == ("bf16", "bf16", "bf16")


@pytest.mark.parametrize("name, tf32", [("a100-sxm-80gb", 156.0), ("h100-sxm-80gb", 494.7), ("b200", 1100.0),
                                        ("gb300-nvl72", 1250.0)])
def test_tf32_peaks_are_the_datasheets(name, tf32):
    assert peak_flops(load_profile(name), "tf32") == pytest.approx(tf32 * 1e12)


def test_nvidia_tf32_is_half_the_bf16_rate_and_amd_falls_back_to_fp32():
    """On every NVIDIA tensor-core generation bundled (Ampere, Hopper, Blackwell) the dense TF32 rate is half the dense
    BF16 one: the independent datasheet figures agree within 3 %. AMD profiles state no TF32 rate: fp32 GEMMs run at
    their fp32 rate."""
    for name in available_profiles():
        p = load_profile(name)
        if p.vendor == "nvidia":
            assert p.peak_tflops.tf32 == pytest.approx(p.peak_tflops.bf16 / 2, rel=0.03), name
        else:
            assert peak_flops(p, "tf32") == peak_flops(p, "fp32"), name


def test_an_fp32_llama_8b_step_costs_about_twice_its_bf16_compute():
    """Llama-3.1-8B on 8 H100, TP 2, seq 4096: the GEMMs take bf16 / TF32 = 2x the time (the profile's datasheet rates),
    and fp32 attention runs unfused on the fp32 units, so the fp32 step is at least twice the bf16 one."""
    from constraints.models.load import load_model
    from constraints.spec import Placement, Recipe
    from measure.projection.project import project

    model, h100 = load_model("Llama-3.1-8B"), load_profile("h100-sxm-80gb")
    recipe, placement = Recipe(tp=2, pp=1, mbs=1, recompute={"granularity": "full", "method": "uniform", "num_layers": 1}), \
        Placement(hardware="h100-sxm-80gb", num_nodes=1, gpus_per_node=8)
    steps = {p: project(model, JobSpec(seq_length=4096, global_batch_size=64, precision=p), recipe, placement, h100).iteration_time_s
             for p in ("bf16", "fp32")}
    assert steps["fp32"] > 2 * steps["bf16"]
