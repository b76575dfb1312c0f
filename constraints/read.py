"""Turn what a user hands `check` (a YAML recipe, a Megatron launch script or argument file, a stack config, or a
Megatron-LM training log) into a Case.

Why here: the CLI stays a thin layer, and the solver's `check --suggest` and the round-trip tests read
files through the same path as users do.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Mapping, Optional, Sequence

from pydantic import ValidationError

from boundary.errors import InputRefused, ShardplanError
from boundary.parse import load_yaml
from boundary.read import iter_text_lines, read_text
from boundary.show import validation_line
from constraints.case import Case, CaseError, case_from_mapping
from constraints.megatron.argv_to_specs import parse_megatron_args
from constraints.megatron.errors import MegatronRecipeIllegal
from constraints.megatron.launch_script import LaunchCommand, extract_argv
from constraints.megatron.launch_world import entry_family_error, world_from_launch
from constraints.megatron.measured import MeasuredRun, measured_from_log
from constraints.megatron.training_log import TrainingLogError, looks_like_training_log, read_training_log
from constraints.models.load import bundled_models, load_model
from constraints.models.mamba import entry_script, entry_script_problem
from constraints.rules.attention import launch_environment_unknown
from constraints.rules.base import BRIDGE_VALIDATED, RuleInput
from constraints.rules.registry import Violation
from constraints.spec import Activation, ModelSpec, Placement
from constraints.stacks.common import StackConfigError
from constraints.stacks.detect import key_for_flag, read_printed_bridge_config, read_stack_config
from hardware.profile import load_profile


class InputError(ShardplanError):
    """Unusable input (exit status 2); one line naming the field and the fix."""


@dataclass
class LoadedCase:
    case: Case
    flags: dict = field(default_factory=dict)
    env: Optional[dict] = None
    unknown_flags: list = field(default_factory=list)
    ignored_flags: list = field(default_factory=list)
    source: str = "yaml"
    warnings: list = field(default_factory=list)  # Violation(severity="warning"): what the input took from elsewhere
    preflight_violations: list = field(default_factory=list)  # Violation: a flag value Megatron refuses (judged without it)
    measured: Optional[MeasuredRun] = None  # a training log: what the run measured (steady state)
    software: Optional[str] = None  # a recipe file's top-level `software:` (STACK:VERSION; shardplan/software_input.py)

    @property
    def validated_by(self) -> Optional[str]:
        """The stack whose launcher validates the flags instead of Megatron-LM's validate_args (RuleInput.validated_by):
        Megatron-Bridge builds its model from the ConfigContainer; Primus and yaml-cfg configs go through Megatron-LM's."""
        return BRIDGE_VALIDATED if self.source == BRIDGE_VALIDATED else None


RECIPE_SUFFIXES = (".yaml", ".yml", ".json")


def _is_recipe_file(path: Path, text: str) -> bool:
    """A recipe by its name (.yaml / .yml / .json, any case) or, named otherwise, by a JSON object's opening brace:
    a recipe saved as `recipe.json` or `recipe.YAML` was read as a launch script and refused as "no pretrain_*.py
    command". A launch script never starts with `{`."""
    return path.suffix.lower() in RECIPE_SUFFIXES or text.lstrip().startswith("{")


def _looks_like_recipe_yaml(path: Path, text: str) -> Optional[dict]:
    if not _is_recipe_file(path, text):
        return None
    try:
        data = load_yaml(text, "recipe", f"recipe file {path}")
    except InputRefused as exc:
        raise InputError(str(exc)) from None
    if not isinstance(data, dict):
        raise InputError(f"{path}: a recipe YAML must be a mapping with model, hardware, nodes, gpus_per_node, job, recipe")
    return data


_EXPECTED = "give a YAML recipe, a Megatron launch script or an argument file"


UNNAMED_MODEL = "megatron-args"  # constraints/megatron/argv_to_specs.py's name for a model read from flags alone


def load_check_input(path: str, hardware: Optional[str], nodes: Optional[int], gpus_per_node: Optional[int],
                     model: Optional[str] = None, script_args: Sequence[str] = (),
                     launch_env: Optional[Mapping[str, str]] = None) -> LoadedCase:
    """A Case from FILE; command-line --hardware/--nodes/--gpus-per-node/--model override or complete it.
    `script_args`: a launch script's positional arguments ($1 ...: `check SCRIPT -- ARG...`); `launch_env`: the launch
    environment the user states (`--env NAME=VALUE`), which the script inherits and the rules judge. A model read
    from flags that match no bundled model is named after the file (issue 31: it showed as 'megatron-args', also as
    the SLURM job name)."""
    loaded = _load_check_input(Path(path), hardware, nodes, gpus_per_node, model, script_args, launch_env)
    if loaded.case.model.name == UNNAMED_MODEL and Path(path).stem:
        named = loaded.case.model.model_copy(update={"name": Path(path).stem[:256]})
        loaded.case = loaded.case.model_copy(update={"model": named})
    return loaded


def _load_check_input(p: Path, hardware: Optional[str], nodes: Optional[int], gpus_per_node: Optional[int],
                      model: Optional[str], script_args: Sequence[str], launch_env: Optional[Mapping[str, str]]) -> LoadedCase:
    if _is_training_log(p):  # a log may be gigabytes: streamed, never read whole (constraints/megatron/training_log.py)
        _no_script_args(script_args, "a training log")
        loaded = _load_training_log(p, hardware, nodes, gpus_per_node, model)
        loaded.env = dict(launch_env) if launch_env is not None else None
        return loaded
    try:  # a recipe or a launch script / argument file: the same 1 MiB limit
        text = read_text(p, "recipe" if p.suffix.lower() in RECIPE_SUFFIXES else "launch script", str(p),
                         expected=_EXPECTED.removeprefix("give "))
    except InputRefused as exc:
        raise InputError(str(exc)) from None
    stack = _stack_config(p, text)  # a Primus / Megatron-Bridge / --yaml-cfg file (constraints.stacks.detect)
    if stack is not None:
        _no_script_args(script_args, f"a {stack.kind} config")
        loaded = _load_stack(stack, hardware, nodes, gpus_per_node, model)
        if launch_env is not None:
            loaded.env = {**launch_env, **(loaded.env or {})}  # the config's own env_vars win, as its launcher sets them
        return loaded
    data = _looks_like_recipe_yaml(p, text)
    if data is not None:
        _no_script_args(script_args, "a recipe")
        data = dict(data)
        for key, value in (("hardware", hardware), ("nodes", nodes), ("gpus_per_node", gpus_per_node), ("model", model)):
            if value is not None:
                data[key] = value
        try:
            return LoadedCase(case=case_from_mapping(data, p.parent), env=dict(launch_env) if launch_env is not None else None,
                              software=recipe_software(data))
        except CaseError as exc:
            raise InputError(str(exc)) from None
    return _load_megatron(text, hardware, nodes, gpus_per_node, model, script_path=str(p), script_args=script_args,
                          launch_env=launch_env)


def recipe_software(data: Mapping[str, Any]) -> Optional[str]:
    """A recipe mapping's top-level `software:` (STACK:VERSION), None when absent; a non-string value is refused."""
    value = data.get("software")
    if value is None:
        return None
    if not isinstance(value, str):
        raise InputError(f"recipe file: software must be STACK:VERSION, e.g. megatron-bridge:26.08 (got {type(value).__name__})")
    return value


def _no_script_args(script_args: Sequence[str], what: str) -> None:
    if script_args:
        raise InputError(f"arguments after --: {what} takes no positional arguments (they are a launch script's $1 "
                         "...); remove them")


LOG_SNIFF_LINES = 400  # the arguments banner or the first iteration lines come early in every Megatron-LM log


def _is_training_log(path: Path) -> bool:
    """A Megatron-LM training log by its first lines (arguments banner, `elapsed time per iteration` lines)."""
    if path.suffix.lower() in RECIPE_SUFFIXES:
        return False
    head = []
    try:
        for number, text, _ in iter_text_lines(path, "training log", 64 * 1024, str(path)):
            if text is not None:
                head.append(text)
            if number >= LOG_SNIFF_LINES:
                break
    except InputRefused:
        return False  # not readable as a stream: the whole-file reader below says why, in its own words
    return looks_like_training_log("\n".join(head))


def _load_training_log(path: Path, hardware, nodes, gpus_per_node, model_ref) -> LoadedCase:
    """A training log's argument dump judged as an argument file is, plus what the run measured. The world size comes
    from --nodes/--gpus-per-node, else from the dump's world_size over the part's GPUs per node. The launch environment
    is not in a log, so the rules that read it are not judged (env None), never judged against an empty one."""
    try:
        log = read_training_log(str(path))
    except TrainingLogError as exc:
        raise InputError(str(exc)) from None
    if hardware is None:
        raise InputError("--hardware: a training log does not name the GPU; pass --hardware NAME|PATH (see `shardplan hardware`)")
    world = log.args.get("world_size", "")
    if (nodes is None or gpus_per_node is None) and world.isdigit() and int(world) > 0:
        gpus = gpus_per_node or load_profile(hardware).gpus_per_node
        if nodes is None and gpus_per_node is None and int(world) < gpus:
            gpus = int(world)  # a run on part of one node (e.g. 2 of 8 GPUs)
        if nodes is None:
            if int(world) % gpus:
                raise InputError(f"--nodes/--gpus-per-node: the log's world_size {world} is not a whole number of "
                                 f"{gpus}-GPU nodes; pass --nodes N --gpus-per-node G")
            nodes = int(world) // gpus
        gpus_per_node = gpus
    if log.bridge_config is not None:  # a Megatron-Bridge log: its ConfigContainer, read as a Bridge YAML file is
        loaded = _bridge_log(path, log, hardware, nodes, gpus_per_node, model_ref)
    else:
        launch = LaunchCommand(script_args=list(log.argv), env={})
        loaded = _judge_launch(launch, hardware, nodes, gpus_per_node, model_ref, what="log")
    loaded.source = "megatron-log"
    loaded.env = None
    job, placement = loaded.case.job, loaded.case.placement
    loaded.measured = measured_from_log(log, job.global_batch_size, job.seq_length, placement.world_size)
    if log.warnings:
        shown_first = "; ".join(log.warnings[:3])
        more = f" (and {len(log.warnings) - 3} more)" if len(log.warnings) > 3 else ""
        loaded.warnings.append(_note("log_not_followed", f"{len(log.warnings)} line(s) of the log not followed: {shown_first}{more}"))
    if log.runs_in_file > 1:
        loaded.warnings.append(_note("log_runs", f"the log holds {log.runs_in_file} runs (restarts appended): read the last"))
    return loaded


def _bridge_log(path: Path, log, hardware, nodes, gpus_per_node, model_ref) -> LoadedCase:
    """A Megatron-Bridge log's recipe: the `Task Configuration` YAML it printed, through the Bridge config reader
    (constraints/stacks/detect.py read_printed_bridge_config). The block names no world size, so the cluster comes from
    --nodes / --gpus-per-node, or one whole node of the part."""
    label = f"{path}:{log.bridge_config_line}"
    try:
        stack = read_printed_bridge_config(log.bridge_config, label, {})
    except StackConfigError as exc:
        raise InputError(str(exc)) from None
    if nodes is None and gpus_per_node is None:
        raise InputError(f"--nodes/--gpus-per-node: {label}: a Megatron-Bridge log's configuration names no world size; "
                         "pass --nodes N --gpus-per-node G as the run was launched")
    loaded = _load_stack(stack, hardware, nodes, gpus_per_node, model_ref)
    loaded.warnings.insert(0, _note("bridge_log", f"the recipe is the Megatron-Bridge ConfigContainer printed at line "
                                                  f"{log.bridge_config_line} (Task Configuration), read as a Bridge YAML"))
    return loaded


def _load_megatron(text: str, hardware, nodes, gpus_per_node, model_ref, script_path: Optional[str] = None,
                   script_args: Sequence[str] = (), launch_env: Optional[Mapping[str, str]] = None) -> LoadedCase:
    if "\r\n" in text:  # bash reads the carriage return as part of each word: `\` then \r continues no line
        raise InputError(f"{script_path or 'the script'}: Windows (CRLF) line endings, which bash reads as part of each "
                         "line (a `\\` before them continues nothing); convert the file with dos2unix, or "
                         "sed -i 's/\\r$//' FILE")

    # bash semantics: a variable the script reads but never sets comes from the environment it runs in (this process's,
    # with --env on top); its positional parameters are the arguments after --
    inherited = {k: v for k, v in {**os.environ, **(launch_env or {})}.items() if not k.isdigit()}
    try:
        launch = extract_argv(text, env={**inherited, **{str(k): a for k, a in enumerate(script_args, start=1)}},
                              script_path=script_path)
    except ValueError as exc:
        raise InputError(str(exc)) from None
    family = entry_family_error(launch.script)
    if family is not None:
        raise InputError(family)
    stated = set(launch_env or {})  # what the user stated (--env, -- ARG...) is no surprise taken from the shell
    launch = launch.model_copy(update={"env_taken": {n: v for n, v in launch.env_taken.items()
                                                     if n not in stated and not n.isdigit()}})
    if launch_env is not None:
        launch = launch.model_copy(update={"env": {**launch_env, **launch.env}})  # the script's exports win
    try:
        return _judge_launch(launch, hardware, nodes, gpus_per_node, model_ref,
                             env_given=launch_env is not None)
    except InputError as exc:  # a flag or the world missing: a broken continuation or ignored #SBATCH may be why
        if not launch.misread:
            raise
        raise InputError(f"{exc} ({'; '.join(launch.misread)})") from None


def _stack_config(path: Path, text: str):
    try:
        return read_stack_config(path, text, dict(os.environ))
    except StackConfigError as exc:
        raise InputError(str(exc)) from None


def _load_stack(stack, hardware, nodes, gpus_per_node, model_ref) -> LoadedCase:
    """A stack config's Megatron arguments judged as a launch script's are; its own keys reported beside them."""
    launch = LaunchCommand(script_args=stack.argv, env=dict(stack.env or {}))
    try:
        loaded = _judge_launch(launch, hardware, nodes, gpus_per_node, model_ref, what="config")
    except InputError as exc:
        # a model file the config names but check could not find is the likely cause of a missing shape: say it too
        cause = f" ({stack.missing_model})" if stack.missing_model and "--model" in str(exc) else ""
        raise InputError(_in_stack_terms(str(exc), stack.kind) + cause) from None
    loaded.source = stack.kind
    loaded.env = dict(stack.env) if stack.env is not None else None  # the stack's launcher sets the rest
    loaded.unknown_flags = list(stack.not_understood) + loaded.unknown_flags
    loaded.ignored_flags = list(stack.ignored) + loaded.ignored_flags
    loaded.warnings = [_note("stack_config", n) for n in stack.notes] + loaded.warnings
    return loaded


def _in_stack_terms(message: str, kind: str) -> str:
    """A refusal naming Megatron flags, with the config key for the last flag it asks for."""
    flags = [f for f in re.findall(r"--[a-z0-9][a-z0-9-]*", message) if key_for_flag(kind, f)]
    return f"{message} (in the {kind} config: {key_for_flag(kind, flags[-1])})" if flags else message


def _judge_launch(launch, hardware, nodes, gpus_per_node, model_ref, what: str = "script",
                  env_given: bool = False) -> LoadedCase:
    nodes, gpus_per_node, world_notes, default_notes = world_from_launch(launch, nodes, gpus_per_node)
    if hardware is None:
        raise InputError(f"--hardware: a Megatron {what} does not name the GPU; pass --hardware NAME|PATH (see `shardplan hardware`)")
    if what == "config" and nodes and not gpus_per_node:
        # a stack config has no launcher to state GPUs per node: a node is the part's server, as `solve` counts it (a
        # launch script's launcher has its own default, torchrun's 1 process per node, taken with a warning)

        profile = load_profile(hardware)
        gpus_per_node = profile.gpus_per_node
        node_notes = [f"the {what} does not state GPUs per node: took {gpus_per_node}, a {profile.name} server's"]
    else:
        node_notes = default_notes
    if not nodes or not gpus_per_node:
        held = [f"--{k.replace('_', '-')} {v}" for k, v in sorted(launch.distributed.items()) if isinstance(v, str) and "$" in v]
        why = f" (its launcher reads {', '.join(held)}, unknown here)" if held else ""
        raise InputError(f"--nodes/--gpus-per-node: the {what} does not fix the world size{why}; pass --nodes N --gpus-per-node G")
    args, early = list(launch.script_args), []
    while True:
        try:
            cfg = parse_megatron_args(args, world_size=nodes * gpus_per_node,
                                      entry_point=os.path.basename(launch.script) if launch.script else None,
                                      argument_file=launch.script is None and what == "script")
            break
        except MegatronRecipeIllegal as exc:  # an illegal recipe, not unusable input: a violation, then the rest
            early.append(Violation(rule=exc.rule, message=str(exc), fix=exc.fix))
            rest = _without_flag(args, exc.flag)
            if rest == args:
                raise InputError(str(exc)) from None
            args = rest
        except ValueError as exc:
            raise _refused_needed_flag(early, exc) or InputError(str(exc)) from None
    try:
        model = _choose_model(cfg, model_ref)
    except InputError as exc:
        raise _refused_needed_flag(early, exc) or exc from None
    try:
        placement = Placement(hardware=hardware, num_nodes=nodes, gpus_per_node=gpus_per_node)
        case = Case(model=model, job=cfg.job, recipe=cfg.recipe, placement=placement)
    except ValidationError as exc:
        raise InputError(validation_line(exc)) from None
    # a sourced or child file check cannot read may export what the environment rules judge: the environment is then
    # unknown (those rules are not judged, and the `sourced_file` warning below says why) unless the script itself
    # states the variable they read
    env_known = not launch.missing or "CUDA_DEVICE_MAX_CONNECTIONS" in (launch.env or {})
    unknown_env: list[Violation] = []
    if launch.script is None and what == "script":
        # an argument file is only Megatron's flags: its launch environment is unknown unless --env states it
        env_known = env_given
        if not env_given:
            unknown_env = launch_environment_unknown(
                RuleInput(model=case.model, job=case.job, recipe=case.recipe, world_size=case.world_size,
                          profile=load_profile(hardware), flags=dict(getattr(cfg, "raw", {}) or {})), "an argument file")
    return LoadedCase(case=case, flags=dict(getattr(cfg, "raw", {}) or {}), env=dict(launch.env or {}) if env_known else None,
                      unknown_flags=list(cfg.unknown_flags), ignored_flags=list(getattr(cfg, "ignored_flags", [])),
                      source="megatron", warnings=[_env_warning(n, v) for n, v in launch.env_taken.items()]
                      + [_note("sourced_file", f"read {f} (not run)") for f in launch.sourced]
                      + [_note("sourced_file", f"the script sources or runs {f}, which check cannot read: what it "
                                               "sets (e.g. CUDA_DEVICE_MAX_CONNECTIONS, or a variable the script then "
                                               "defaults) is unknown here"
                                               + ("" if env_known else ", so the launch environment is not judged"))
                         for f in launch.missing]
                      + [_note("script_layout", w) for w in launch.misread]
                      + [_note("script_not_followed", w) for w in launch.warnings]
                      + [_note("slurm_allocation", w) for w in launch.allocation]
                      + [_note("script_world", w) for w in world_notes]
                      + [_note("gpus_per_node_default", w) for w in node_notes]
                      + [_note("argument_source", n) for n in getattr(cfg, "notes", [])] + unknown_env,
                      preflight_violations=early + _entry_script_violations(launch.script, model)
                      + [Violation(rule=r.rule, message=r.message, fix=r.fix) for r in getattr(cfg, "refusals", [])])


def _entry_script_violations(script, model) -> list[Violation]:
    """The pretrain_*.py of a launch script against the model it must build (constraints.models.mamba.entry_script_problem)."""
    problem = entry_script_problem(script, model)
    return [Violation(rule="entry_script", message=problem, fix=f"launch {entry_script(model)}")] if problem else []


def _refused_needed_flag(early: list[Violation], exc: Exception) -> Optional[InputError]:
    """A flag Megatron's argparse refused (judged without it) that the verdict cannot do without (the model's shape, the
    batch): nothing can be judged, so it is unusable input, said with argparse's own message and its fix."""
    for v in early:
        flag = _flag_of(v.message)
        if v.rule == "megatron_argparse" and flag and re.search(rf"{re.escape(flag)}(?![A-Za-z0-9-])", str(exc)):
            return InputError(f"{v.message}; the verdict needs {flag}: {v.fix}")
    return None


def _flag_of(message: str) -> str:
    """The flag an argparse message names (`argument --num-layers: ...`), or '' when it names none."""
    m = re.search(r"argument (--[A-Za-z0-9-]+)", message)
    return m.group(1) if m else ""


def _without_flag(args: list[str], flag: str) -> list[str]:
    """The argument list without `flag` and its value (`--flag V` or `--flag=V`)."""
    out, skip = [], False
    for a in args:
        if skip:
            skip = False
        elif a == flag:
            skip = True
        elif not a.startswith(flag + "="):
            out.append(a)
    return out


def _note(rule: str, message: str) -> Violation:
    """A warning about how the script was read (constraints.megatron.launch_script / launch_world / megatron_vocab)."""
    fixes = {"sourced_file": "check reads sourced and submitted files without running them; put them beside the "
                             "script or in the working directory",
             "script_not_followed": "write the value in the script, or set the variable it tests in the environment",
             "script_layout": "edit the line it names: bash and sbatch run the script as the warning says, not as it looks",
             "script_world": "drop --nodes/--gpus-per-node to judge the script's own cluster",
             "slurm_allocation": "nothing to do for the job itself; to judge another size, change its #SBATCH lines",
             "gpus_per_node_default": "pass --gpus-per-node G if a node holds another number of GPUs",
             "argument_source": "state the value in the arguments to make it explicit",
             "stack_config": "state the value in the config file to make the verdict independent of other files",
             "log_not_followed": "the argument dump's entries that are no Megatron-LM option here are left out; check "
                                 "the launch script instead if one of them changes the recipe",
             "log_runs": "split the file per run to judge an earlier one",
             "bridge_log": "check the Bridge YAML itself to judge the recipe without the log"}
    return Violation(rule=rule, severity="warning", message=message, fix=fixes[rule])


_SECRET_NAME = re.compile(r"TOKEN|KEY|SECRET|PASS|CRED|AUTH", re.IGNORECASE)


def _env_warning(name: str, value: str) -> Violation:
    shown = "<redacted>" if _SECRET_NAME.search(name) else value  # check output lands in CI logs and issues
    return Violation(rule="env_variable", severity="warning",
                     message=f"the script reads ${name} without setting it; took {name}={shown} from the environment",
                     fix=f"set {name} in the script to make the verdict independent of the shell")


# Model flags a --model must agree with when the arguments also state them: (flag, value in the arguments,
# value in the model). Not compared: --max-position-embeddings of a RoPE model (no weights; `render` writes
# max(config, seq)) and --kv-channels under MLA (Megatron ignores it there).
def _stated_model_flags(raw: dict[str, Any], m: ModelSpec) -> list[tuple[str, Any, Any]]:
    pairs = [(f, raw[f], getattr(m, attr)) for f, attr in (
        ("--num-layers", "num_layers"), ("--hidden-size", "hidden_size"), ("--ffn-hidden-size", "ffn_hidden_size"),
        ("--num-attention-heads", "num_attention_heads"), ("--vocab-size", "vocab_size"),
        ("--num-experts", "num_experts"), ("--moe-router-topk", "moe_router_topk"),
        ("--moe-ffn-hidden-size", "moe_ffn_hidden_size"),
        ("--moe-shared-expert-intermediate-size", "moe_shared_expert_intermediate_size"),
        ("--q-lora-rank", "q_lora_rank"), ("--kv-lora-rank", "kv_lora_rank"), ("--qk-head-dim", "qk_head_dim"),
        ("--qk-pos-emb-head-dim", "qk_pos_emb_head_dim"), ("--v-head-dim", "v_head_dim")) if f in raw]
    if "--kv-channels" in raw and not m.multi_latent_attention:
        pairs.append(("--kv-channels", raw["--kv-channels"], m.kv_channels))
    if "--max-position-embeddings" in raw and m.learned_position_embeddings:
        pairs.append(("--max-position-embeddings", raw["--max-position-embeddings"], m.max_position_embeddings))
    if "--num-attention-heads" in raw and not m.multi_latent_attention:
        # TransformerConfig: num_query_groups only with --group-query-attention, else one group per head
        groups = raw.get("--num-query-groups", 1) if raw.get("--group-query-attention") else raw["--num-attention-heads"]
        pairs.append(("--num-query-groups", groups, m.num_query_groups))
    shape_stated = any(f in raw for f in ("--num-layers", "--hidden-size", "--num-attention-heads"))
    for flag, model_value in (("--swiglu", m.activation == Activation.swiglu),
                              ("--quick-geglu", m.activation == Activation.quick_geglu), ("--qk-layernorm", m.qk_layernorm),
                              ("--multi-latent-attention", m.multi_latent_attention),
                              ("--untie-embeddings-and-output-weights", not m.tied_embeddings),
                              ("--disable-bias-linear", not m.mlp_bias)):
        # a flag the arguments leave out builds Megatron's default (no SwiGLU, tied, biased...): compare both ways.
        # Under MLA, --qk-layernorm is how Megatron's MLA spec normalises DeepSeek's q/kv latents
        # (gpt_layer_specs.py: q_layernorm / kv_layernorm for MLA): not a conflict with an MLA model's config.
        if flag == "--qk-layernorm" and m.multi_latent_attention:
            continue
        if raw.get(flag) is True or shape_stated:
            pairs.append((flag, bool(raw.get(flag)), model_value))
    if "--normalization" in raw or shape_stated:
        pairs.append(("--normalization", raw.get("--normalization", "LayerNorm"), m.normalization.value))
    if m.activation.gated and (shape_stated or raw.get("--swiglu") or raw.get("--quick-geglu")):
        # gpt-oss's clamp and linear offset change what the experts run (measure/layer_ops.expert_glu_clamp_ops)
        pairs.append(("--activation-func-clamp-value", raw.get("--activation-func-clamp-value"), m.glu_clamp))
        pairs.append(("--glu-linear-offset", raw.get("--glu-linear-offset", 0.0), m.glu_linear_offset))
    return pairs


@lru_cache(maxsize=1)
def _bundled_shapes() -> dict[str, str]:
    """Each bundled model's architecture (its spec without the name, as JSON) -> its name."""
    return {load_model(name).model_dump_json(exclude={"name"}): name for name in bundled_models()}


def named_after_bundled(model: ModelSpec) -> ModelSpec:
    """A model read from Megatron flags, named after the bundled model it is to the last field (a script training
    Llama-3.1-8B shows as Llama-3.1-8B, not 'megatron-args'), so the user sees the arguments were read as meant."""
    name = _bundled_shapes().get(model.model_dump_json(exclude={"name"}))
    return model if name is None else model.model_copy(update={"name": name})


def _choose_model(cfg, model_ref: Optional[str]) -> ModelSpec:
    """--model completes arguments without a model shape; where the arguments state model flags too, they
    must agree (a silent swap would judge a different network than the one the file launches)."""
    raw = dict(getattr(cfg, "raw", {}) or {})
    if model_ref is None:
        if cfg.model is not None:
            return named_after_bundled(cfg.model)
        if not any(f in raw for f in ("--num-layers", "--hidden-size", "--num-attention-heads")):
            raise InputError("--model: the arguments hold no model shape (--num-layers, --hidden-size, ...); pass --model NAME|PATH")
        raise InputError(f"--model: the arguments lack {', '.join(cfg.model_missing)}; add "
                         f"{'it' if len(cfg.model_missing) == 1 else 'them'}, or pass --model NAME|PATH")
    model = load_model(model_ref)
    for flag, stated, expected in _stated_model_flags(raw, model):
        if stated != expected:
            said = f"give {flag}, which {model.name} does not use" if stated is True else \
                f"say {flag} {stated}, but {model.name} has {expected}"
            fix = f"fix {flag}"
            if flag == "--num-query-groups" and not raw.get("--group-query-attention"):
                fix = f"add --group-query-attention --num-query-groups {expected}"  # without it Megatron uses MHA
            raise InputError(f"--model {model_ref}: the arguments {said}; drop --model to judge the arguments' model, "
                             f"or {fix}")
    return _with_trained_mtp(model, raw, model_ref)


def _with_trained_mtp(model: ModelSpec, raw: dict[str, Any], model_ref: str) -> ModelSpec:
    """The MTP depth is a training choice, not part of the checkpoint's shape: Megatron trains the depth its
    arguments give (--mtp-num-layers, --mtp-use-repeated-layer), and Megatron-Bridge recipes set it over the HF
    config's num_nextn_predict_layers (Nemotron 3 Super: HF 1, recipe 2 repeated). So stated MTP flags replace the
    model's."""
    if "--mtp-num-layers" not in raw and "--mtp-use-repeated-layer" not in raw:
        return model
    fields = model.model_dump()
    fields.update(mtp_num_layers=raw.get("--mtp-num-layers", model.mtp_num_layers) or 0,
                  mtp_repeated_layer=bool(raw.get("--mtp-use-repeated-layer", False)))
    try:
        return ModelSpec.model_validate(fields)
    except ValidationError as exc:
        line = validation_line(exc, rename={"mtp_num_layers": "--mtp-num-layers"})
        raise InputError(f"--model {model_ref}: {line}; fix --mtp-num-layers") from None
