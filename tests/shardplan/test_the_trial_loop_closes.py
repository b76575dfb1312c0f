"""The closed loop end to end, with the GPU run replaced by a log printed in Megatron-LM's own format: solve writes
trial runs, each "runs" (its arguments parsed as Megatron would, its step time set here), calibrate fits the logs, and
solve --calibration ranks a measured answer by its measurement. The log format is Megatron-LM's (arguments.py
_print_args, training.py training_log @ d98e8a64, as in tests/data/logs/SOURCES.md); the step times are the test's
own inputs, so what is asserted is the loop's arithmetic, not a published figure."""
from __future__ import annotations

import json

from constraints.case import Case
from constraints.megatron.flags import FLAGS
from constraints.megatron.launch_script import extract_argv
from constraints.megatron.tokenize import tokenize_args
from constraints.megatron.training_log_argv import DEST_TABLE
from constraints.read import load_check_input
from shardplan import api
from shardplan.calibrate import recipe_key
from tests.helpers.builders import run_cli

JOB = dict(seq_length=8192, global_batch_size=64)


def megatron_log(argv: list[str], world_size: int, step_s: float, iterations: int = 12) -> str:
    """A rank-0 log as Megatron-LM prints it: the argument dump (dest names, dotted padding), then iteration lines."""
    flags, _, _ = tokenize_args(argv)
    dest_of = {flag: dest for dest, (flag, _) in DEST_TABLE.items()}
    lines = ["------------------------ arguments ------------------------"]
    entries = {}
    for flag, value in flags.items():
        dest, info = dest_of[flag], FLAGS[flag]
        if info.store_false:  # `--disable-bias-linear` is printed as its dest, add_bias_linear, holding False
            entries[dest] = "False"
        else:
            entries[dest] = " ".join(map(str, value)) if isinstance(value, list) else ("True" if value is True else str(value))
    entries["world_size"] = str(world_size)
    for name in sorted(entries):
        lines.append(f"  {name} {'.' * max(2, 48 - len(name))} {entries[name]}")
    lines.append("-------------------- end of arguments ---------------------")
    for i in range(1, iterations + 1):
        lines.append(f" [2026-01-01 00:00:{i:02d}] iteration {i:8d}/{iterations:8d} | consumed samples: {i * 64:12d} | "
                     f"elapsed time per iteration (ms): {step_s * 1000:.1f} | learning rate: 1.000000E-04 | global batch size: "
                     f"{64:5d} | lm loss: 9.000000E+00 | loss scale: 1.0 | number of skipped iterations:   0 | "
                     "number of nan iterations:   0 |")
    return "\n".join(lines) + "\n"


def answer_cases(result) -> list[Case]:
    model, placement, job = result.context
    return [Case(model=model, job=job, recipe=a.recipe, placement=placement) for a in result.recipes]


def test_solve_trials_calibrate_and_rerank(tmp_path):
    trials = tmp_path / "trials"
    first = api.solve("Llama-3.1-8B", "h100-sxm-80gb", 1, **JOB, top=4, trials=2, trials_dir=str(trials))
    assert len(first.trials.scripts) == 2 and (trials / "run_trials.sh").is_file() and (trials / "TRIALS.md").is_file()
    script_text = (trials / first.trials.scripts[0]).read_text()
    for flag in ("--train-iters 30", "--log-interval 1", "--log-throughput", "--timing-log-level 1", "--mock-data"):
        assert flag in script_text
    assert "--save " not in script_text  # a trial leaves nothing behind but its log
    # "run" the trials: the first (the projected best) measures 30 % slower than projected, the second as projected
    logs = []
    for n, name in enumerate(first.trials.scripts):
        loaded = load_check_input(str(trials / name), "h100-sxm-80gb", None, None)
        answer = next(a for a, case in zip(first.recipes, answer_cases(first)) if recipe_key(case) == recipe_key(loaded.case))
        step_s = answer.projection.iteration_time_s * (1.3 if n == 0 else 1.0)

        argv = extract_argv((trials / name).read_text(), env={}, script_path=str(trials / name)).script_args
        log = tmp_path / f"{n}.log"
        log.write_text(megatron_log(argv, 8, step_s))
        logs.append(str(log))
        assert recipe_key(loaded.case) == recipe_key(load_check_input(str(log), "h100-sxm-80gb", None, None).case)
    cal = tmp_path / "cal.json"
    rc, out, err = run_cli("calibrate", *logs, "--hardware", "h100-sxm-80gb", "-o", str(cal))
    assert rc == 0, err
    data = json.loads(cal.read_text())
    assert len(data["evidence"]) == 2 and data["free_factors"] == ["compute", "communication", "host"]
    second = api.solve("Llama-3.1-8B", "h100-sxm-80gb", 1, **JOB, top=4, calibration=str(cal))
    measured = [a for a in second.recipes if a.measured_step_s is not None]
    assert len(measured) == 2  # both trials are answers of the calibrated solve, carrying their measurements
    steps = [a.measured_step_s if a.measured_step_s is not None else a.step_time_us / 1e6 for a in second.recipes]
    assert steps == sorted(steps)  # ranked by measurement where there is one
    slow = max(measured, key=lambda a: a.measured_step_s)
    assert second.recipes.index(slow) > 0  # the trial measured 30 % slower no longer leads
    low, high = second.recipes[0].projection.tokens_per_s_per_gpu_range
    assert low < second.recipes[0].projection.tokens_per_s_per_gpu < high
