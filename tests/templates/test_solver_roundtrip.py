"""Property: every top recipe `solve` gives, for every bundled model, survives render -> `check` unchanged.

For each model a small cluster and job where recipes fit (some axes pinned so the solve takes about a second)
is solved once (module-level cache); each of the top-K recipes is rendered to torchrun and to SLURM, passes
`bash -n`, and is read back by `check` (constraints.read.load_check_input, the user's path). Asserted: the same
recipe field by field after normalisation, the same job and placement, no flag check does not understand,
the same legal/fits verdict, the same memory report (peak bytes included) and the same projection as checking
the recipe directly, and as the solver's own re-verification. Hypothesis then draws hostile site paths
(spaces, `$()`, backticks, `;`, quotes, newlines) for a drawn model, rank and format: the recipe still
comes back and the script's argv is exactly the rendered arguments.

Scenarios vary precision, CP, sharding and recompute across models so that most recipe flags are rendered
and parsed at least once (78 answers, 104 distinct flags; the hybrid Mamba models render --hybrid-layer-pattern,
with `|` segments where they interleave, and pretrain_hybrid.py). Zero-bubble schedules are opt-in in the solver's
space, so no answer has one today; _expected_recipe keeps their rendering rule should a scenario pin one.
"""
from __future__ import annotations

import functools
import shutil
import subprocess
from pathlib import Path
from typing import NamedTuple

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from constraints.case import Case
from constraints.megatron.launch_script import extract_argv
from constraints.models.load import bundled_models, load_model
from constraints.models.mamba import entry_script
from constraints.read import LoadedCase, load_check_input
from constraints.spec import JobSpec, PipelineSchedule, Placement, Recipe
from hardware.profile import load_profile
from shardplan.verdict import check_and_project
from solver.workflow import solve_case
from templates.recipe_args import RenderPaths, recipe_to_megatron_args
from templates.render import FORMATS, render_script, unsupported_features
from tests.templates.test_render import same_run

BASH = shutil.which("bash")
TOP_K = 3
US_PER_S = 1_000_000
ZERO_BUBBLE = (PipelineSchedule.zb_h1, PipelineSchedule.zbv)
SMALL = {"cp": [1], "mbs": [1], "vpp": [1, 2]}  # keeps every solve near a second on 2 cores
MEGATRON = ["1f1b", "interleaved"]  # where zero-bubble answers would crowd out the top-K (see _expected_recipe)


class Scenario(NamedTuple):
    hardware: str
    nodes: int
    job: dict
    pins: dict


# Nodes are the fewest (roughly) on which the model's training state fits the GPUs' HBM with short sequences.
SCENARIOS: dict[str, Scenario] = {
    "Llama-2-7b": Scenario("h100-sxm-80gb", 1, {}, {**SMALL, "mbs": [1, 2]}),
    "Llama-2-13b": Scenario("h100-sxm-80gb", 1, {"precision": "fp16"}, SMALL),
    "Llama-2-70b": Scenario("h100-sxm-80gb", 2, {"precision": "fp8-delayed"}, SMALL),
    "Llama-3.1-8B": Scenario("h100-sxm-80gb", 1, {"seq_length": 8192}, {**SMALL, "cp": [2], "vpp": [1]}),
    "Llama-3.1-70B": Scenario("h200-sxm-141gb", 2, {}, {**SMALL, "recompute": ["full:block:2", "full:uniform:1"]}),
    "Llama-3.1-405B": Scenario("b200", 8, {"precision": "mxfp8"},
                               {**SMALL, "tp": [8], "pp": [8], "acc_split": [True], "schedule": MEGATRON}),
    "GPT-3-175B": Scenario("h100-sxm-80gb", 8, {}, {**SMALL, "tp": [8], "pp": [8, 16], "schedule": MEGATRON}),
    "Nemotron-4-340B": Scenario("mi300x", 8, {}, {**SMALL, "dp_sharding": ["megatron_fsdp"], "vpp": [1], "tp": [4, 8],
                                                  "schedule": MEGATRON}),
    "Qwen3-8B": Scenario("mi300x", 1, {}, {**SMALL, "dp_sharding": ["none"]}),
    "Qwen3-30B-A3B": Scenario("h100-sxm-80gb", 1, {},
                              {**SMALL, "recompute": ["selective:core_attn+moe_act"], "schedule": MEGATRON}),
    "Qwen3-235B-A22B": Scenario("b200", 4, {"precision": "fp8-blockwise"},
                                {**SMALL, "vpp": [1], "tp": [1, 2], "ep": [8], "schedule": MEGATRON}),
    "Mixtral-8x7B-v0.1": Scenario("h100-sxm-80gb", 2, {}, {**SMALL, "etp": [1, 2], "tp": [2]}),
    "Mixtral-8x22B-v0.1": Scenario("mi300x", 2, {}, {**SMALL, "ep": [8]}),
    "Moonlight-16B-A3B": Scenario("h100-sxm-80gb", 1, {}, {**SMALL, "recompute": ["selective:core_attn+mla_up_proj"]}),
    "DeepSeek-V3": Scenario("b200", 32, {"precision": "fp8-blockwise"}, {**SMALL, "vpp": [1], "tp": [2, 4]}),
    "Kimi-K2-Instruct": Scenario("mi300x", 32, {}, {**SMALL, "vpp": [1], "tp": [4], "ep": [32, 64]}),
    "gpt-oss-20b": Scenario("h100-sxm-80gb", 1, {}, SMALL),
    "Mistral-7B-v0.1": Scenario("b200", 1, {"seq_length": 8192, "precision": "nvfp4"}, SMALL),
    "Llama-4-Scout-17B-16E": Scenario("b200", 4, {"precision": "mxfp8"}, {**SMALL, "vpp": [1], "ep": [16], "tp": [1, 2],
                                                                          "schedule": MEGATRON}),
    "Llama-4-Maverick-17B-128E": Scenario("gb300-nvl72", 16, {"precision": "nvfp4"},
                                          {**SMALL, "vpp": [1], "ep": [64], "tp": [1], "schedule": MEGATRON}),
    "gpt-oss-120b": Scenario("b200", 2, {"precision": "fp8-tensorwise"}, {**SMALL, "schedule": MEGATRON}),
    # hybrid Mamba models: interleaving only through `|` segments of --hybrid-layer-pattern (rendered as pipes)
    "Nemotron-H-8B-Base-8K": Scenario("h100-sxm-80gb", 1, {"seq_length": 8192}, {**SMALL, "pp": [2], "vpp": [2],
                                                                                  "schedule": ["interleaved"]}),
    "Nemotron-H-47B-Base-8K": Scenario("h100-sxm-80gb", 4, {}, {**SMALL, "schedule": MEGATRON}),
    "Nemotron-H-56B-Base-8K": Scenario("b200", 4, {"precision": "fp8-tensorwise"}, {**SMALL, "schedule": MEGATRON}),
    "Nemotron-3-Nano-30B-A3B": Scenario("h100-sxm-80gb", 2, {}, {**SMALL, "ep": [8], "schedule": MEGATRON}),
    "Nemotron-3-Super-120B-A12B": Scenario("b200", 4, {"precision": "nvfp4"}, {**SMALL, "ep": [16], "tp": [2],
                                                                               "schedule": MEGATRON}),
}
MODELS = sorted(SCENARIOS)

# Site paths a user might pass: every one must stay one literal argument (render.py quotes them).
HOSTILE_CHARS = st.sampled_from(list(" ;&|$`'\"\\(){}[]<>*?!#~=%^,:\n\t") + ["$(", "${", "`id`", "é"])
HOSTILE_TEXT = st.lists(st.one_of(HOSTILE_CHARS, st.text("abc/_.-0", min_size=1, max_size=3)), min_size=1,
                        max_size=6).map(lambda parts: "/site/" + "".join(parts))


def test_every_bundled_model_has_a_scenario():
    assert sorted(bundled_models()) == MODELS


@functools.lru_cache(maxsize=None)
def solved(model_name: str) -> tuple:
    """(Ranked, Case) for each of the top-K answers: one exhaustive solve per model (CP-SAT gives the same
    answers, tests/solver/test_core.py, but takes tens of seconds on the larger MoE spaces)."""
    sc = SCENARIOS[model_name]
    model = load_model(model_name)
    job = JobSpec(**{"seq_length": 2048, "global_batch_size": 64, **sc.job})
    placement = Placement(hardware=sc.hardware, num_nodes=sc.nodes, gpus_per_node=8)
    result, _ = solve_case(model, job, placement, load_profile(sc.hardware), dict(sc.pins), {}, TOP_K, 0.0,
                           "exhaustive", 30.0)
    return tuple((r, Case(model=model, job=job, recipe=r.recipe, placement=placement)) for r in result.ranked)


def _expected_recipe(case: Case) -> Recipe:
    """What the rendered script runs. pretrain_gpt.py has no zero-bubble schedule, so render writes (and says in
    a NOTE) the 1F1B or interleaved schedule with the same VPP; everything else is written as it is."""
    r = case.recipe
    if r.schedule in ZERO_BUBBLE:
        fallback = PipelineSchedule.interleaved if r.vpp > 1 else PipelineSchedule.one_f_one_b
        r = r.model_copy(update={"schedule": fallback})
    return r


def _normalised(case: Case, loaded_case: Case) -> tuple:
    """(recovered model, wanted recipe) with the documented equivalences of tests/templates/test_render.py applied."""
    want = case.model_copy(update={"recipe": _expected_recipe(case)})
    return same_run(want, loaded_case)


def _render_and_load(case: Case, fmt: str, tmp_path: Path, paths: RenderPaths | None = None):
    script = tmp_path / f"train-{fmt}.sh"
    text = render_script(case, fmt, paths)
    script.write_text(text)
    if BASH is not None:
        proc = subprocess.run([BASH, "-n", str(script)], capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr
    # only the GPU type: nodes and GPUs per node must come back from the script itself
    return text, load_check_input(str(script), case.placement.hardware, None, None)


def _verdict(loaded) -> dict:
    data = check_and_project(loaded)["json"]
    return {key: data[key] for key in ("legal", "fits", "memory", "projection")}


@functools.lru_cache(maxsize=None)
def _direct_verdict(model_name: str, rank: int) -> dict:
    case = solved(model_name)[rank][1]
    return _verdict(LoadedCase(case=case.model_copy(update={"recipe": _expected_recipe(case)})))


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("model_name", MODELS)
def test_solver_answers_round_trip_through_render_and_check(model_name, fmt, tmp_path):
    answers = solved(model_name)
    assert answers, f"{model_name}: the scenario has no fitting recipe; give it more nodes"
    for rank, (ranked, case) in enumerate(answers):
        text, loaded = _render_and_load(case, fmt, tmp_path)
        where = f"{model_name} #{rank + 1} ({fmt})"
        got_model, want_recipe = _normalised(case, loaded.case)
        assert loaded.case.recipe == want_recipe, where
        assert got_model == case.model, where
        assert (loaded.case.job, loaded.case.placement) == (case.job, case.placement), where
        assert loaded.unknown_flags == [], where
        got = _verdict(loaded)
        assert got == _direct_verdict(model_name, rank), where
        if case.recipe.schedule not in ZERO_BUBBLE:  # what the script runs is what the solver ranked
            assert got["legal"] and got["fits"], where
            assert got["memory"]["peak_bytes"] == ranked.check.memory.peak_bytes, where
            assert round(got["projection"]["iteration_time_s"] * US_PER_S) == ranked.time_us, where
        else:  # runs another schedule, never checked by the solver (it may not fit): said, and not batch-rendered
            assert unsupported_features(case) and "# NOTE: schedule" in text, where


@pytest.mark.skipif(BASH is None, reason="bash not installed")
@settings(max_examples=24, derandomize=True, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(model_name=st.sampled_from(MODELS), rank=st.integers(0, TOP_K - 1), fmt=st.sampled_from(FORMATS),
       data_path=HOSTILE_TEXT, checkpoint_dir=HOSTILE_TEXT, megatron_path=HOSTILE_TEXT,
       tokenizer_model=HOSTILE_TEXT)  # a real data path needs its tokenizer (RenderPaths refuses one without)
def test_hostile_site_paths_do_not_change_the_recovered_recipe(tmp_path, model_name, rank, fmt, data_path,
                                                              checkpoint_dir, megatron_path, tokenizer_model):
    answers = solved(model_name)
    _, case = answers[min(rank, len(answers) - 1)]
    paths = RenderPaths(data_path=data_path, tokenizer_model=tokenizer_model, checkpoint_dir=checkpoint_dir,
                        megatron_path=megatron_path)
    text, loaded = _render_and_load(case, fmt, tmp_path, paths)
    launch = extract_argv(text)
    assert launch.script_args == recipe_to_megatron_args(case.model, case.job, case.recipe, paths)
    assert launch.script == megatron_path + "/" + entry_script(case.model) and launch.unresolved == []
    got_model, want_recipe = _normalised(case, loaded.case)
    assert (loaded.case.recipe, got_model, loaded.case.job) == (want_recipe, case.model, case.job)
    assert loaded.unknown_flags == []
