"""Every number is bounded where it enters, with the physical reason: nothing downstream overflows int64 /
CP-SAT, divides by zero, becomes infinite, or materialises a per-unit list of unbounded size."""
from __future__ import annotations

import math
import time

import pytest
import yaml

from boundary.errors import InputRefused
from boundary.numbers import bounded_float, bounded_int
from constraints.memory.magnitudes import MAX_TOTAL_BYTES, magnitude_error, params_upper_bound
from constraints.models.load import bundled_models, load_model
from constraints.models.params import param_counts
from constraints.spec import JobSpec, ModelSpec, Placement, Recipe
from hardware.profile import PROFILES_DIR, ProfileError, load_profile
from shardplan.cli.measure import check_measure_limits
from solver.cpsat.solve import check_solve_limits
from solver.fewest_gpus import fewest_gpus
from solver.space import SpaceError, build_space, parse_range

LLAMA = load_model("Llama-3.1-8B")
JOB = JobSpec(seq_length=4096, global_batch_size=64)
NODE = Placement(hardware="h100-sxm-80gb", num_nodes=1, gpus_per_node=8)


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf, 0.0, -1.0, 1e300])
def test_bounded_float_refuses_non_finite_and_out_of_range(value):
    with pytest.raises(InputRefused, match="--x"):
        bounded_float(value, "--x", 0.0, 100.0, "why", lo_open=True)
    assert bounded_float(50, "--x", 0.0, 100.0, "why") == 50.0


def test_bounded_int_refuses_bools_and_out_of_range():
    for value in (True, 0, 101, 2.5):
        with pytest.raises(InputRefused):
            bounded_int(value, "--n", 1, 100, "why")


@pytest.mark.parametrize("k,limit", [(10, math.nan), (10, math.inf), (10, 0.0), (0, 60.0), (10**9, 60.0)])
def test_solve_limits_refuse_nan_infinite_and_unbounded(k, limit):
    with pytest.raises(InputRefused):
        check_solve_limits(k, limit)
    check_solve_limits(10, 60.0)


def test_fewest_gpus_target_nan_is_refused():
    with pytest.raises(InputRefused, match="--target-tokens-per-s: nan"):
        fewest_gpus(NODE, math.nan, solve_at=lambda pl: None)


@pytest.mark.parametrize("budget,threads", [(math.inf, None), (math.nan, None), (1.0, 100_000), (1.0, 0)])
def test_measure_limits_refuse_infinite_budget_and_too_many_threads(budget, threads):
    with pytest.raises(InputRefused):
        check_measure_limits(budget, threads, 20, 3)
    check_measure_limits(5.0, 1, 20, 3)


def test_range_past_the_axis_ceiling_is_clamped_not_materialised():
    start = time.monotonic()
    space = build_space(LLAMA, JOB, NODE, ranges={"vpp": (1, 100_000_000), "mbs": (1, 10**12), "tp": (1, 10**12)})
    assert time.monotonic() - start < 2
    assert max(space.domains["vpp"]) <= LLAMA.num_layers and max(space.domains["mbs"]) <= JOB.global_batch_size
    assert max(space.domains["tp"]) <= NODE.world_size


@pytest.mark.parametrize("pins,match", [({"tp": [16]}, "above the 8 GPUs"), ({"vpp": [33]}, "above the model's 32 layers"),
                                        ({"mbs": [128]}, "above the global batch size 64")])
def test_pin_past_the_axis_ceiling_is_refused_with_the_reason(pins, match):
    with pytest.raises(SpaceError, match=match):
        build_space(LLAMA, JOB, NODE, pins=pins)


def test_range_starting_past_the_ceiling_and_inverted_ranges_are_refused():
    with pytest.raises(SpaceError, match="give a range up to 32"):
        build_space(LLAMA, JOB, NODE, ranges={"vpp": (100, 200)})
    with pytest.raises(SpaceError, match="low end is above the high end"):
        build_space(LLAMA, JOB, NODE, ranges={"pp": (4, 2)})


@pytest.mark.parametrize("text", ["1..1" + "0" * 30, "9" * 13, "1e30"])
def test_parse_range_refuses_overlong_or_non_integer_bounds(text):
    with pytest.raises(ValueError):
        parse_range(text)
    assert parse_range("2..8") == (2, 8)


def test_bundled_models_are_inside_the_magnitude_bound_and_the_bound_is_above_their_counts():
    for name in bundled_models():
        model = load_model(name)
        assert params_upper_bound(model) >= param_counts(model).total
        assert magnitude_error(model, JobSpec(seq_length=8192, global_batch_size=4096)) is None


def test_model_past_int64_is_refused_with_the_reason():
    fields = dict(name="huge", num_layers=4096, hidden_size=1 << 20, ffn_hidden_size=1 << 22, num_attention_heads=1 << 14,
                  num_query_groups=1 << 14, kv_channels=64, vocab_size=1 << 20, max_position_embeddings=4096,
                  num_experts=1 << 16, moe_router_topk=8, moe_ffn_hidden_size=1 << 22)
    with pytest.raises(ValueError, match="2\\*\\*61-byte"):
        ModelSpec(**fields)


def test_job_whose_activations_pass_int64_is_refused():
    job = JobSpec(seq_length=1 << 24, global_batch_size=1 << 24)
    assert "lower seq_length or global_batch_size" in magnitude_error(LLAMA, job)
    with pytest.raises(SpaceError, match="2\\*\\*61-byte"):
        build_space(LLAMA, job, NODE)
    assert MAX_TOTAL_BYTES == 1 << 61


@pytest.mark.parametrize("field,value,match", [
    (("peak_tflops", "bf16"), 1e-300, "every time finite"),
    (("hbm_capacity_bytes",), 10**40, "64-bit range"),
    (("calibration", "gemm_efficiency"), [], "at least one"),
    (("scale_up_latency_us",), 0, "greater than or equal"),
])
def test_profile_numbers_out_of_physical_range_are_refused(tmp_path, field, value, match):
    data = yaml.safe_load((PROFILES_DIR / "h100-sxm-80gb.yaml").read_text())
    node = data
    for key in field[:-1]:
        node = node.setdefault(key, {})
    node[field[-1]] = value
    path = tmp_path / "p.yaml"
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(ProfileError, match=match):
        load_profile(str(path))


def test_recipe_field_bounds():
    for fields in ({"cpu_offloading_num_layers": 10**9}, {"hierarchical_cp_sizes": [1] * 100},
                   {"pipeline_layout": "t" * 100_000}, {"first_stage_layers": 10**9}):
        with pytest.raises(ValueError):
            Recipe(**fields)


@pytest.mark.parametrize("kw,match", [({"train_tokens": math.nan}, "--train-tokens"), ({"train_tokens": math.inf}, "--train-tokens"),
                                      ({"train_tokens": 1e12, "usd_per_gpu_hour": math.nan}, "--usd-per-gpu-hour")])
def test_sweep_budget_numbers_are_finite(kw, match):
    import shardplan

    with pytest.raises(shardplan.ShardplanError, match=match.lstrip("-").replace("-", "_")):  # NaN once came out of the JSON as NaN
        shardplan.sweep("Llama-3.1-8B", "h100-sxm-80gb", [1], seq_length=4096, global_batch_size=64, **kw)


def test_an_error_line_quoting_a_huge_value_is_cut_in_its_middle():
    """Issue 33's fuzz: a Bridge config whose TP is a 12 KB `${A:...}` value printed a 12 KB error line."""
    from boundary.show import MAX_ERROR_LINE_CHARS, bounded_line

    line = "--tensor-model-parallel-size expects an integer, got '" + "${A:" * 3000 + "'; pass e.g. --tensor-model-parallel-size 8"
    cut = bounded_line(line)
    assert len(cut) < MAX_ERROR_LINE_CHARS + 60 and cut.startswith("--tensor-model-parallel-size expects")
    assert cut.endswith("pass e.g. --tensor-model-parallel-size 8") and "characters cut" in cut
    assert bounded_line("short") == "short"
