"""A user's profile with datasheet numbers only takes its bundled siblings' median fractions of peak as its
microbenchmarks (hardware/typical_microbench.py), says so under `solve`, and is never mistaken for a measured part."""
from __future__ import annotations

import statistics

import yaml
from click.testing import CliRunner

from hardware.calibration import Calibration, derive_calibration, load_software_constants
from hardware.profile import bundled_profiles, load_profile
from shardplan.cli.main import cli

# NVIDIA L40S datasheet (nvidia.com/en-us/data-center/l40s): 362.05 dense BF16 tensor TFLOP/s (733 FP8 dense),
# 48 GB GDDR6 at 864 GB/s, PCIe Gen4 x16 (32 GB/s one direction), no NVLink.
L40S = {
    "name": "l40s", "description": "NVIDIA L40S 48GB PCIe", "vendor": "nvidia", "compute_capability": 8.9,
    "peak_tflops": {"bf16": 362.05, "fp16": 362.05, "fp8": 733.0, "fp32": 91.6},
    "hbm_capacity_bytes": 48_305_799_168, "hbm_bandwidth_gb_per_s": 864.0, "gpus_per_node": 8,
    "scale_up_domain_size": 8, "scale_up_bandwidth_gb_per_s": 32.0, "scale_up_latency_us": 5.0, "nics_per_gpu": 0.5,
    "nic_bandwidth_gbit_per_s": 200.0, "scale_out_latency_us": 5.0, "supports_fp8": True,
    "sources": {"peak_tflops.bf16": "NVIDIA L40S datasheet"},
}


def _write(tmp_path, data) -> str:
    path = tmp_path / "l40s.yaml"
    path.write_text(yaml.safe_dump(data))
    return str(path)


def test_every_bundled_profile_has_its_own_microbenchmarks():
    for prof in bundled_profiles():
        assert prof.microbench is not None and prof.microbench_from == () and prof.calibrated, prof.name


def test_a_datasheet_only_profile_takes_the_nvidia_siblings_median_fractions(tmp_path):
    prof = load_profile(_write(tmp_path, L40S))
    nvidia = [p for p in bundled_profiles() if p.vendor == "nvidia"]
    assert set(prof.microbench_from) == {p.name for p in nvidia} and not prof.calibrated
    # published best-matmul fractions of the NVIDIA parts (stas00/ml-engineering's table, in the bundled profiles)
    bf16_fracs = [p.microbench.matmul_bf16_tflops / p.peak_tflops.bf16 for p in nvidia]
    assert 0.72 < statistics.median(bf16_fracs) < 0.81
    assert abs(prof.microbench.matmul_bf16_tflops - statistics.median(bf16_fracs) * 362.05) < 1e-3
    # typical_microbench rounds the median to 4 decimals
    assert prof.microbench.attention_fraction == round(statistics.median(p.microbench.attention_fraction for p in nvidia), 4)
    # the calibration is derived from them and the fitted software constants, not left on the bare defaults
    peak = prof.peak_tflops
    assert prof.calibration == derive_calibration(peak.bf16, peak.fp8, 864.0, 32.0, prof.microbench, load_software_constants())
    assert prof.calibration != Calibration()


def test_own_microbenchmarks_or_a_calibration_block_are_kept(tmp_path):
    mine = {**L40S, "microbench": {"matmul_bf16_tflops": 250.0, "attention_fraction": 0.4, "hbm_fraction": 0.8,
                                   "allreduce_ring_busbw_gb_per_s": 20.0}}
    prof = load_profile(_write(tmp_path, mine))
    assert prof.microbench.matmul_bf16_tflops == 250.0 and prof.microbench_from == () and prof.calibrated
    fitted = {**L40S, "calibration": {"attention_efficiency": 0.33}}
    prof = load_profile(_write(tmp_path, fitted))
    assert prof.microbench is None and prof.calibration.attention_efficiency == 0.33 and prof.calibrated


def test_solve_says_whose_fractions_stand_in(tmp_path):
    path = _write(tmp_path, L40S)
    out = CliRunner().invoke(cli, ["solve", "--model", "llama-3.1-8b", "--hardware", path, "--nodes", "1",
                                   "--gpus-per-node", "8", "--seq-length", "4096", "--global-batch-size", "64",
                                   "--top", "1", "--proposer", "none"])
    assert out.exit_code == 0, out.output
    assert "has no microbenchmarks of its own" in out.output and "h100-sxm-80gb" in out.output


def test_check_warns_as_solve_notes(tmp_path):
    """`check` projects too, so a part whose microbenchmarks are borrowed gets the same caveat, as a warning; a bundled
    part (its own microbenchmarks) gets none."""
    import shardplan

    path = _write(tmp_path, L40S)
    recipe = {"model": "Llama-3.1-8B", "hardware": path, "nodes": 1, "gpus_per_node": 8,
              "job": {"seq_length": 4096, "global_batch_size": 64}, "recipe": {"tp": 2, "mbs": 1}}
    said = [w for w in shardplan.check(recipe).warnings if w.rule == "uncalibrated_profile"]
    assert len(said) == 1 and said[0].message.startswith("l40s has no microbenchmarks of its own")
    assert not [w for w in shardplan.check({**recipe, "hardware": "h100-sxm-80gb"}).warnings
                if w.rule == "uncalibrated_profile"]


def test_the_vendor_is_read_in_any_case(tmp_path):
    """`vendor: NVIDIA` is nvidia: the part borrows the NVIDIA siblings' fractions, not every part's (AMD included)."""
    upper = load_profile(_write(tmp_path, {**L40S, "vendor": "NVIDIA"}))
    assert upper.vendor == "nvidia"
    assert upper.microbench_from == load_profile(_write(tmp_path, L40S)).microbench_from
    assert not any(name.startswith("mi3") for name in upper.microbench_from)
