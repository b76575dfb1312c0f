"""The public API: `check`, `solve`, `render`, `models`, `hardware` return the typed results of shardplan/results.py.

Why here: the CLI (shardplan/cli/*.py) is a thin layer over these functions (parse options, call, format), so a
notebook gets exactly what `--format json` prints. Unusable input raises `ShardplanError` (one line naming the
field and the fix); any other exception is a bug. Input read at this boundary that fails pydantic validation or a
plain ValueError while building the specs is turned into a ShardplanError naming the option. Each public function's
arguments are checked once at its edge (`@api_edge`, shardplan/api_arguments/), which also turns anything else that
escapes into a ShardplanError subclass (boundary/errors.py).
"""
from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path
from typing import Any, Mapping, Optional, Sequence, Union

from pydantic import ValidationError

from boundary.errors import ShardplanError
from boundary.read import recording_reads
from boundary.show import shown
from boundary.write import check_output_dir, folder_locked, refuse_overwriting_input
from constraints.case import Case, case_from_mapping
from constraints.memory.allocator import MemoryFraction, resolve_memory_fraction
from constraints.models.load import bundled_models, load_model
from constraints.models.params import param_counts
from constraints.read import LoadedCase, load_check_input, recipe_software
from constraints.rules.registry import RuleInput, recipe_free_violations
from constraints.spec import JobSpec, Placement, Recipe
from hardware.listing import profiles_table
from hardware.profile import HardwareProfile, load_profile
from measure.calibration.carry import CARRIED_RULE
from measure.calibration.store import CalibrationFile, calibrated_profile, factors_for, load_calibration, model_key
from measure.projection.error_band import tokens_range
from shardplan.api_arguments.bounds import MAX_TRIALS
from shardplan.api_arguments.edge import api_edge
from shardplan.api_arguments.models import Arguments, CheckArguments, RenderArguments, SolveArguments
from shardplan.calibrate import calibrate, recipe_key  # noqa: F401  (calibrate: the API re-exports it)
from shardplan.nearest_fix import attach_search_fixes
from shardplan.progress import step
from shardplan.results import (
    CheckResult,
    FewestGpus,
    HardwareInfo,
    ModelInfo,
    Parallel,
    RejectedRecipe,
    RenderedFolder,
    RenderResult,
    SolvedRecipe,
    SolveResult,
)
from shardplan.software_input import generation_engine, search_refusal, software_for_search, with_engine_note, with_software
from shardplan.verdict import check_and_project
from solver.deadline import wall_clock_limit
from solver.fewest_gpus import CountScreen, fewest_gpus, target_explanation
from solver.objective import Objective
from solver.proposer.config import ProposerConfig
from solver.request import SolveRequest
from solver.trials import choose_trials, communication_share
from solver.workflow import bound_fields, collect_pins, inapplicable_pins, resolve_recompute_kind, solve_request
from templates.placeholders import placeholder_lines
from templates.recipe_args import DATA_PATH_PLACEHOLDER, RenderPaths, recipe_to_megatron_args
from templates.render import launch_env, placeholders_of, render_script
from templates.render_files import not_rendered, render_solutions, write_script
from templates.render_input import (
    flags_not_carried,
    load_render_input,
    refuse_unless_forced,
    render_problems,
    render_slurm_options,
    script_site_paths,
)
from templates.trial_files import write_trials

RangeLike = Union[int, str, tuple, None]

_OPTION_OF_FIELD = {"seq_length": "--seq-length", "global_batch_size": "--global-batch-size", "precision": "--precision",
                    "num_nodes": "--nodes", "gpus_per_node": "--gpus-per-node", "hardware": "--hardware"}


def option_error(exc: ValidationError) -> str:
    """One line naming the command-line option (not the pydantic field) and the limit it broke."""
    err = exc.errors()[0]
    field = str(err["loc"][0]) if err.get("loc") else ""
    option = _OPTION_OF_FIELD.get(field, field.replace("_", "-") or "input")
    msg = err["msg"].removeprefix("Value error, ")
    return f"{option}: {msg[:1].lower() + msg[1:]} (got {err.get('input')!r})"


@contextmanager
def input_boundary():
    """Errors while reading the user's input are unusable input: ShardplanError with one line."""
    try:
        yield
    except ShardplanError:
        raise
    except ValidationError as exc:
        raise ShardplanError(option_error(exc)) from None
    except ValueError as exc:
        raise ShardplanError(str(exc).splitlines()[0] if str(exc) else type(exc).__name__) from None


@api_edge(CheckArguments)
def check(source: Union[str, Path, Mapping[str, Any]], *, hardware: Optional[str] = None, nodes: Optional[int] = None,
          gpus_per_node: Optional[int] = None, model: Optional[str] = None, max_memory_fraction: Optional[float] = None,
          project: bool = True, suggest: bool = False, calibration: Optional[str] = None,
          script_args: Sequence[str] = (), env: Optional[Mapping[str, str]] = None, software: Optional[str] = None) -> CheckResult:
    """Judge one recipe: a YAML recipe file, a Megatron launch script or argument file, a stack config, a Megatron-LM
    training log, or a recipe mapping (the YAML's content). hardware / nodes / gpus_per_node / model override or complete
    what the source states. `calibration`: a file `calibrate` wrote for this hardware; the projection and the memory
    reserve then follow that cluster. `script_args`: a launch script's positional arguments ($1 ...); `env`: the launch
    environment (the script inherits it; the rules that read the environment judge it, also for an argument file).
    `software`: the stack generation, STACK:VERSION (docs/software.md); else the recipe's `software:` or the versions a
    log prints, else the newest generation; the result's `software` says which and where from."""
    with input_boundary():
        if isinstance(source, Mapping):
            data = dict(source)
            for key, value in (("hardware", hardware), ("nodes", nodes), ("gpus_per_node", gpus_per_node), ("model", model)):
                if value is not None:
                    data[key] = value
            loaded = LoadedCase(case=case_from_mapping(data), software=recipe_software(data))
        else:
            loaded = load_check_input(str(source), hardware, nodes, gpus_per_node, model, script_args=tuple(script_args),
                                      launch_env=dict(env) if env is not None else None)
        loaded, software_used = with_software(loaded, software, calibration)
    profile, calibration_file, note = profile_with_calibration(loaded.case.placement.hardware, calibration, loaded.case.model)
    fraction = memory_fraction(max_memory_fraction, calibration_file)
    margin = fraction.margin
    engine = generation_engine(software_used.value, loaded.case.job)  # a Megatron-DeepSpeed generation's (docs/software.md)
    software_used = with_engine_note(software_used, engine)
    verdict = check_and_project(loaded, margin_fraction=margin, project=project, profile=profile, deepspeed=engine)
    data = verdict["json"]
    data["memory_fraction"] = fraction.model_dump()
    if calibration is not None:
        data["calibration"] = str(calibration)
    data["model_params"] = parameter_counts(loaded.case.model)
    data["software"] = software_used.model_dump()
    if data.get("projection"):
        data["projection"]["tokens_per_s_per_gpu_range"] = list(tokens_range(data["projection"]["tokens_per_s_per_gpu"],
                                                                           calibrated=calibration is not None and note is None))
    if note is not None:
        data["warnings"].append({"rule": "calibration_other_model", "severity": "warning", "message": note,
                                 "fix": "shardplan calibrate a log of this model (a short trial run) on this cluster"})
    if not verdict["ok"]:  # every fix shown is the nearest legal, fitting recipe (shardplan/nearest_fix.py)
        refusal = search_refusal(software_used)  # a generation the search cannot keep to: no search, said so
        if refusal is None:
            attach_search_fixes(loaded, data, margin, profile, suggest=suggest)
        else:
            data["suggestion"] = {"found": False, "message": refusal}
    return CheckResult.of(data, loaded.case)


def parameter_counts(model) -> dict[str, int]:
    """{total, active} exact parameters of a model (HF convention: unpadded vocabulary, no MTP), as `models` lists them."""
    counts = param_counts(model)
    return {"total": counts.total, "active": counts.active if counts.active is not None else counts.total}


def profile_with_calibration(hardware: str, calibration: Optional[str], model=None
                             ) -> tuple[HardwareProfile, Optional[CalibrationFile], Optional[str]]:
    """(the hardware profile, calibrated by the file `calibrate` wrote when one is given; that file, read once; a note
    when it holds no run of `model`, whose speed then takes only the factors that carry across models,
    measure/calibration/carry.py). A file for another part is refused."""
    with input_boundary():
        profile = load_profile(hardware)
        if calibration is None:
            return profile, None, None
        cal = load_calibration(str(calibration))
        calibrated = calibrated_profile(profile, cal, str(calibration), model)
    if factors_for(cal, model)[1]:
        return calibrated, cal, None
    return calibrated, cal, (f"--calibration {shown(str(calibration))} holds no run of this model: only the cluster's "
                             f"{CARRIED_RULE} factors and allocator gap apply, compute stays at the shipped constants "
                             "(measure/calibration/carry.py); calibrate on a log of this model")


@api_edge(SolveArguments)
@recording_reads  # the writes of render_dir / trials_dir / output never replace a file it read
def solve(model: str, hardware: str, nodes: int, *, seq_length: int, global_batch_size: int, gpus_per_node: Optional[int] = None,
          precision: str = "bf16", top: int = 10, tp: RangeLike = None, pp: RangeLike = None, vpp: RangeLike = None,
          cp: RangeLike = None, ep: RangeLike = None, etp: RangeLike = None, mbs: RangeLike = None, schedule: Optional[str] = None,
          recompute: Optional[str] = None, sequence_parallel: Optional[bool] = None, tp_comm_overlap: Optional[bool] = None,
          dp_sharding: Optional[str] = None, moe_dispatcher: Optional[str] = None, ep_comm_overlap: Optional[bool] = None,
          uneven_stages: Optional[bool] = None, max_memory_fraction: Optional[float] = None, objective: str = "throughput",
          target_tokens_per_s: Optional[float] = None, method: str = "cpsat", time_limit_s: float = 60.0,
          proposer: Union[str, ProposerConfig] = "rules", render_dir: Optional[str] = None, max_time_s: float = 300.0,
          calibration: Optional[str] = None, trials: Optional[int] = None, trials_dir: Optional[str] = None,
          software: Optional[str] = None) -> SolveResult:
    """The best legal recipes for a model on `nodes` x `gpus_per_node` GPUs of `hardware` (default: the profile's GPUs
    per server or tray, e.g. 4 on GB200 NVL72), ranked by `objective` (throughput | memory | fewest-gpus), each
    re-verified by check. tp..mbs take N, 'LO..HI' or (lo, hi);
    recompute 'none' | 'selective' | 'full' pins the granularity; proposer is 'none' | 'rules' | a
    solver.proposer.config.ProposerConfig (for an LLM endpoint). `max_time_s` bounds the whole solve's wall
    clock (solver/deadline.py): past it, SolveTimeLimit says so. `calibration`: a file `calibrate` wrote for this
    hardware, so the ranking, the projections and the memory reserve follow that cluster, and an answer a calibrating
    log measured is ranked by that measurement. `trials` K with `trials_dir`: write K short measuring runs of the most
    informative answers there (solver/trials.py, templates/trial_files.py), to feed back through `calibrate`.
    `software`: the stack generation (STACK:VERSION, docs/software.md; default the newest): the search keeps to what it
    has (constraints/software/apply.py solve_pins), and one it cannot search is refused in one line."""
    objective = Objective(objective)  # the fraction, objective, method and top were checked at the edge (api_edge)
    if target_tokens_per_s is not None and objective != Objective.fewest_gpus:
        raise ShardplanError("--target-tokens-per-s: only --objective fewest-gpus reads a target; add that objective or drop the target")
    from solver.cpsat.solve import check_solve_limits  # lazy: imports OR-Tools, which `--help` and `models` must not load

    check_solve_limits(top, time_limit_s)  # NaN / infinite limits and an unwritable render_dir fail before any work
    if render_dir:
        check_output_dir(render_dir, "--render")
    if (trials is None) != (trials_dir is None):
        raise ShardplanError("--trials: give the number of trials and the folder together (--trials K -o DIR)")
    if trials is not None:
        if isinstance(trials, bool) or not isinstance(trials, int) or not 1 <= trials <= min(top, MAX_TRIALS):
            raise ShardplanError(f"--trials: give 1..{min(top, MAX_TRIALS)} trials, at most --top (got {shown(trials)})")
        check_output_dir(trials_dir, "-o")
    with input_boundary():
        config = proposer if isinstance(proposer, ProposerConfig) else ProposerConfig(kind=proposer)
        # the hints may take at most half of --max-time, so a slow or hung endpoint never costs the answer: the final
        # solve runs outside the proposer's budget (solver.proposer.loop), in the half left
        config = config.model_copy(update={"budget_s": min(config.budget_s, max_time_s / 2)})
        spec = load_model(model)
        profile, calibration_file, calibration_note = profile_with_calibration(hardware, calibration, spec)
        job = JobSpec(seq_length=seq_length, global_batch_size=global_batch_size, precision=precision)
        placement = Placement(hardware=hardware, num_nodes=nodes,
                              gpus_per_node=profile.gpus_per_node if gpus_per_node is None else gpus_per_node)
        ranges = {"tp": tp, "pp": pp, "vpp": vpp, "cp": cp, "ep": ep, "etp": etp, "mbs": mbs}
        pins, bounds = collect_pins(ranges, schedule, None if recompute == "none" else recompute, recompute == "none",
                                    sequence_parallel, dp_sharding, tp_comm_overlap, moe_dispatcher, ep_comm_overlap, uneven_stages)
        pins = resolve_recompute_kind(spec, pins)
        pins, software_used = software_for_search(software, spec, pins, calibration)
    fraction = memory_fraction(max_memory_fraction, calibration_file)
    margin = fraction.margin
    request = SolveRequest(model=spec, job=job, placement=placement, profile=profile, pins=pins, bounds=bounds, top=top,
                           margin=margin, method=method, time_limit_s=time_limit_s, objective=objective, proposer=config,
                           target_tokens_per_s=target_tokens_per_s)

    with wall_clock_limit(max_time_s):
        result, tables, placement, tried, hint_report = _run_solve(request)
        cases = [Case(model=spec, job=job, recipe=r.recipe, placement=placement) for r in result.ranked]
        out = _solve_result(result, tables, cases, objective, placement, profile, hint_report)
        out.ignored_pins = inapplicable_pins(spec, pins)
        out.calibration = None if calibration is None else str(calibration)
        out.model, out.model_params = spec.name, parameter_counts(spec)
        out.software = software_used.model_dump()
        out.memory_fraction = fraction.model_dump()
        for answer in out.recipes:
            if answer.projection is not None:
                low_high = tokens_range(answer.projection.tokens_per_s_per_gpu, calibrated=calibration is not None and calibration_note is None)
                answer.projection = answer.projection.model_copy(update={"tokens_per_s_per_gpu_range": low_high})
        if calibration_note is not None:
            out.job_warnings.append(f"calibration_other_model: {calibration_note}")
        if calibration_file is not None:
            out.recipes, cases = rank_measured_first(out.recipes, cases, calibration_file)
        if tried is not None:
            out.fewest_gpus = FewestGpus(target_tokens_per_s=target_tokens_per_s, tried=tried)
        if not result.ranked:
            out.explanation = _explanation(request, placement, tried)
    if render_dir:  # nothing fits: SUMMARY.md says 0 of 0 and an earlier render's scripts go (no stale answer)
        Path(render_dir).mkdir(parents=True, exist_ok=True)
        with folder_locked(render_dir):  # two renders into one folder take turns: SUMMARY.md lists every script
            written = render_solutions(cases, render_dir, notes=[f"{r.time_us / 1e6:.3f} s/iter" for r in result.ranked])
        out.rendered = RenderedFolder(directory=str(render_dir), scripts=[p.name for p in written],
                                      not_rendered=[f"rank {i}: {'; '.join(why)}" for i, why in not_rendered(cases).items()],
                                      placeholders=placeholder_lines(placeholders_of(cases[0], "torchrun")) if written else [])
    if trials is not None:
        out.trials = _write_trials(out, cases, trials, trials_dir)
    return out.for_context(spec, placement, job)


def rank_measured_first(recipes: list[SolvedRecipe], cases: list, cal) -> tuple[list[SolvedRecipe], list]:
    """Answers a calibrating log measured carry that measurement and are ranked by it; the others by their projected
    step. A measurement is the fact the projection only estimates."""
    measured = {(e.model_key, e.recipe_key): e.measured_iteration_time_s for e in cal.evidence}
    keyed = []
    for answer, case in zip(recipes, cases):
        step = measured.get((model_key(case.model), recipe_key(case)))
        if step is not None:
            answer.measured_step_s = step
        keyed.append((step if step is not None else answer.step_time_us / 1e6, answer, case))
    keyed.sort(key=lambda item: item[0])  # stable: equal steps keep the solver's order
    return [a for _, a, _ in keyed], [c for _, _, c in keyed]


def _write_trials(out: SolveResult, cases: list, k: int, directory: str) -> RenderedFolder:
    """The trial folder for the chosen answers (a zero-bubble answer pretrain_gpt.py cannot run is never chosen)."""
    runnable = [i for i in range(len(cases)) if i + 1 not in not_rendered(cases)]
    shares = {i: communication_share(out.recipes[i].projection.breakdown.model_dump(), out.recipes[i].projection.iteration_time_s)
              for i in runnable}
    picked = [runnable[j] for j in choose_trials([shares[i] for i in runnable], k)]
    informative = picked[-1] if 1 < k < len(runnable) else None  # choose_trials puts it last
    reasons = [f"communication {100 * shares[i]:.1f} % of its step (the best: {100 * shares[picked[0]]:.1f} %): tells compute from communication"
               if i == informative else f"rank {i + 1}: among the best (measured, it is then ranked by its measurement)"
               for i in picked]
    names = write_trials([cases[i] for i in picked], [i + 1 for i in picked], reasons,
                         [out.recipes[i].projection.iteration_time_s for i in picked], directory)
    return RenderedFolder(directory=str(directory), scripts=names,
                          not_rendered=[f"rank {i}: {'; '.join(why)}" for i, why in not_rendered(cases).items()])


def _run_solve(request: SolveRequest):
    """(SolveResult of solver/, Tables, placement answered, fewest-gpus tries or None, HintReport or None)."""
    r = request
    if r.objective == Objective.fewest_gpus:
        def solve_at(pl):
            # each node count: the plain throughput solve (no proposer) of the same request on that placement
            per_count = r.model_copy(update={"placement": pl, "objective": Objective.throughput, "proposer": None})
            with step(f"solving {pl.num_nodes} node(s)"):
                res, tab, _ = solve_request(per_count, step=step)
            return res, tab

        screen = CountScreen(r.model, r.job, r.profile, r.margin, r.pins, r.bounds)
        result, tables, placement, tried = fewest_gpus(r.placement, r.target_tokens_per_s, solve_at, screen)
        return result, tables, placement, tried, None
    result, tables, report = solve_request(r, step=step)
    return result, tables, r.placement, None, report


def _solve_result(result, tables, cases, objective: Objective, placement, profile, hint_report) -> SolveResult:
    return SolveResult(recipes=[solved_recipe(r, c) for r, c in zip(result.ranked, cases)],
                       proven_optimal=result.proven_optimal, **bound_fields(result, objective, placement),
                       method=result.method, space=tables.counts, evaluated=result.evaluated, proposer=hint_report,
                       objective=objective.value, nodes=placement.num_nodes, best_objective=result.stats.get("best_objective"),
                       projection_calibrated=profile.calibrated, model_notes=list(tables.space.model.config_notes),
                       job_warnings=_job_warnings(tables.space.model, tables.space.job, placement, profile),
                       rejected_by_check=[RejectedRecipe(recipe=r.model_dump(mode="json", exclude_defaults=True), why=why)
                                          for r, why in result.rejected])


def _job_warnings(model, job, placement, profile) -> list[str]:
    """The warnings `check` gives every script of this job (rules that read no recipe field), said once by `solve`.
    None where such a rule's error rejects the job (NVFP4 on a part without FP4 tensor cores): then no recipe runs, and
    a warning about how it would run (the Transformer Engine version NVFP4 needs) would stand above the reason."""
    found = recipe_free_violations(RuleInput(model, job, Recipe(), placement.world_size, profile))
    if any(v.severity == "error" for v in found):
        return []
    return [f"{v.rule}: {v.message} (fix: {v.fix})" for v in found if v.severity == "warning"]


def _explanation(request: SolveRequest, placement, tried) -> dict:
    """Why nothing fits (at `placement`, the one answered): the fewest-gpus target, or the minimal conflicting pins and
    the remedies."""
    if tried and target_explanation(tried, placement.num_nodes):
        return target_explanation(tried, placement.num_nodes)
    from solver.explain import explain_infeasible  # lazy: imports OR-Tools, which `--help` and `models` must not load

    r = request
    with step("explaining why nothing fits"):
        return explain_infeasible(r.model, r.job, placement, r.profile, r.pins, r.bounds, r.margin)


def solved_recipe(ranked, case) -> SolvedRecipe:
    """One ranked answer with its layout, memory, projection, Megatron arguments and launch environment."""
    r, rep = case.recipe, ranked.check
    parallel = Parallel(tp=r.tp, pp=r.pp, vpp=r.vpp, cp=r.cp, ep=r.ep, etp=r.etp_effective, dp=rep.dp, expert_dp=rep.expert_dp, mbs=r.mbs,
                        num_microbatches=rep.memory.num_microbatches, sequence_parallel=r.sp_active, tp_comm_overlap=r.tp_comm_overlap,
                        recompute=r.recompute.model_dump(mode="json"), distributed_optimizer=r.dp_sharding.value == "distributed_optimizer",
                        dp_sharding=r.dp_sharding.value, schedule=r.schedule.value,
                        account_for_embedding_and_loss_in_pipeline_split=r.account_for_embedding_in_pipeline_split,
                        first_stage_layers=r.first_stage_layers, last_stage_layers=r.last_stage_layers,
                        moe_dispatcher=r.moe_dispatcher.value, ep_comm_overlap=r.overlap_moe_expert_parallel_comm)
    return SolvedRecipe(parallel=parallel, recipe=r, step_time_us=ranked.time_us, ranking_time_us=ranked.rank_time_us,
                        memory=rep.memory, projection=rep.projection,
                        megatron_args=recipe_to_megatron_args(case.model, case.job, r), env=launch_env(case))


@api_edge(RenderArguments)
@recording_reads  # `output` never replaces a file it read (boundary/write.py)
def render(source: Union[str, Path, Mapping[str, Any]], *, format: str = "torchrun", output: Optional[str] = None,
           force: bool = False, hardware: Optional[str] = None, nodes: Optional[int] = None,
           gpus_per_node: Optional[int] = None, slurm: Optional[Mapping[str, Any]] = None, **paths: Any) -> RenderResult:
    """A ready-to-run Megatron-LM launch script (format torchrun | slurm) or stack config (primus | bridge |
    bridge-overrides; yaml-cfg is refused, templates.stack_render.render_yaml_cfg) for a recipe YAML file or mapping,
    or any file `check` reads (a launch script, argument file or stack config). hardware / nodes / gpus_per_node override or complete what the source states.
    The recipe is checked first: an illegal one raises RenderRefused (a ShardplanError listing every problem) unless
    force=True. `paths`: data_path, tokenizer_model, checkpoint_dir, megatron_path, mock_data
    (templates.recipe_args.RenderPaths); `slurm`: sbatch settings for format slurm (templates.slurm_options.SlurmOptions
    fields). `placeholders` lists every `/path/to/...` left in the text (also in its header).
    `output`: also write it there (atomically). From a launch script, the script's own --data-path and HF
    --tokenizer-model are kept unless `paths` gives others, and `not_carried` lists the script's flags the rendered
    script leaves out or sets otherwise. `shardplan render` is this function and nothing else."""
    if output is not None and not isinstance(source, Mapping):
        refuse_overwriting_input(source, output, "output")
    with input_boundary():
        loaded = load_render_input(source, hardware, nodes, gpus_per_node)
        given = {k: v for k, v in paths.items() if v is not None and v != DATA_PATH_PLACEHOLDER}  # the CLI's default: none given
        render_paths = RenderPaths(**{**script_site_paths(loaded.flags, given), **given})
        slurm_settings = render_slurm_options(format, slurm)
    problems = render_problems(loaded, force)
    refuse_unless_forced(problems, force)
    text = render_script(loaded.case, format, render_paths, slurm=slurm_settings)
    # a launch script's own flags that a launch-script format does not write as the script did (stack configs name
    # them otherwise): said, not dropped silently
    not_carried = flags_not_carried(loaded.flags, text) if loaded.flags and format in ("torchrun", "slurm") else []
    if output is not None:
        try:
            write_script(output, text)
        except OSError as exc:
            raise ShardplanError(f"output: cannot write {output} ({exc.strerror}); give a writable path") from None
    return RenderResult(format=format, script=text, path=output, problems=problems,
                        model_notes=list(loaded.case.model.config_notes), not_carried=not_carried,
                        placeholders=placeholder_lines(placeholders_of(loaded.case, format, render_paths)))


@api_edge(Arguments)
def models() -> list[ModelInfo]:
    """Every bundled model with exact total and active parameter counts."""
    rows = []
    for name in bundled_models():
        m = load_model(name)
        counts = parameter_counts(m)
        rows.append(ModelInfo(name=name, total_params=counts["total"], active_params=counts["active"],
                              layers=m.num_layers, hidden_size=m.hidden_size, moe=m.is_moe, mla=m.multi_latent_attention,
                              num_experts=m.num_experts, topk=m.moe_router_topk, hybrid_layer_pattern=m.hybrid_layer_pattern))
    return rows


@api_edge(Arguments)
def hardware() -> list[HardwareInfo]:
    """Every bundled hardware profile, sorted by name."""
    return [HardwareInfo(**row) for row in profiles_table()]


def memory_fraction(given: Optional[float], calibration_file=None) -> MemoryFraction:
    """The share of HBM this verdict allows (constraints/memory/allocator.py): the user's, else 100 % under a calibration
    that measured the allocator gap, else the learnt default."""
    measured_gap = calibration_file is not None and calibration_file.factors.allocator_gap_bytes is not None
    return resolve_memory_fraction(given, measured_gap)
