"""`render --format primus|bridge|bridge-overrides|yaml-cfg`: a recipe as the config file of a stack on Megatron-LM.

Why from the Megatron argument list: `render --format torchrun` already writes the exact `pretrain_gpt.py`
arguments of a recipe (templates.recipe_args); each writer lays those same arguments out under the stack's
key names (constraints.stacks.keys), so `check` reads the file back to the same recipe (tests/
test_stack_configs_roundtrip.py). Layouts: constraints.stacks.primus / stack_bridge / stack_yaml_cfg.
"""
from __future__ import annotations

import shlex
from typing import Any

import yaml

from constraints.case import Case
from constraints.spec import Activation
from constraints.stacks.bridge import BRIDGE_SECTIONS
from constraints.stacks.bridge_precision import PRECISION_DESTS, fields_from_dests, recipe_name
from constraints.stacks.keys import CORE_RENAMES, QUICK_GELU_TARGET, dests_from_args
from templates.escape import comment_safe, hydra_value, name_safe, refuse_interpolation
from templates.placeholders import header_block, rendered_placeholders
from templates.recipe_args import PATH_OPTION_OF_DEST, RenderPaths, recipe_to_megatron_args

STACK_FORMATS: tuple[str, ...] = ("primus", "bridge", "bridge-overrides", "yaml-cfg")

class StackRenderError(ValueError):
    """A recipe this stack's config cannot state; one line for the user."""


def _dests(case: Case, paths: RenderPaths | None, fmt: str) -> dict[str, Any]:
    dests = dests_from_args(recipe_to_megatron_args(case.model, case.job, case.recipe, paths))
    for dest, value in dests.items():  # only the site paths are free text; the rest are numbers and fixed words
        refuse_interpolation(value, PATH_OPTION_OF_DEST.get(dest, dest), f"--format {fmt}")
    return dests


def _core(dests: dict[str, Any]) -> dict[str, Any]:
    """argparse dests -> Megatron-Core field names (GQA implied by num_query_groups, SwiGLU by the activation)."""
    inverse = {v: k for k, v in CORE_RENAMES.items()}
    out: dict[str, Any] = {}
    for dest, value in dests.items():
        if dest == "group_query_attention":
            continue
        out[inverse.get(dest, dest)] = value
    return out


def _header(case: Case, fmt: str, placeholders: str = "") -> str:
    """The comment block on top: user text only in its comment-safe form (no newline can end a comment and start a
    key or an override), the hardware in the suggested command shell-quoted too, since a user pastes it."""
    r, hardware = case.recipe, comment_safe(case.placement.hardware)
    return (f"# shardplan render --format {fmt}: {comment_safe(case.model.name)} on {case.placement.num_nodes} x "
            f"{case.placement.gpus_per_node} {hardware}\n"
            f"# TP={r.tp} PP={r.pp} VPP={r.vpp} CP={r.cp} EP={r.ep} MBS={r.mbs}; check it with:\n"
            f"#   shardplan check FILE --hardware {shlex.quote(hardware)} --nodes {case.placement.num_nodes} "
            f"--gpus-per-node {case.placement.gpus_per_node}\n" + placeholders)


def _header_for(case: Case, fmt: str, paths: RenderPaths | None) -> str:
    found = rendered_placeholders(case, paths, launch_script=False)
    return _header(case, fmt, "".join(f"# {comment_safe(line)}\n" for line in header_block(found)))


def _dump(data: dict) -> str:
    return yaml.safe_dump(data, sort_keys=False, default_flow_style=False, width=120)


def render_primus(case: Case, paths: RenderPaths | None = None) -> str:
    """A Primus experiment: every argument in `overrides` (its keys are Megatron's argparse dests)."""
    dests = _dests(case, paths, "primus")
    exp = {"work_group": "shardplan", "exp_name": name_safe(f"{case.model.name}-tp{case.recipe.tp}-pp{case.recipe.pp}"),
           "workspace": "./output",
           "modules": {"pre_trainer": {"framework": "megatron", "config": "pre_trainer.yaml",
                                       "model": "language_model.yaml", "overrides": dests}}}
    note = ("# The model shape is stated in overrides; `model: language_model.yaml` is Primus's base model file, whose\n"
            "# other keys (left at Primus's defaults) are not part of this recipe.\n")
    return _header_for(case, "primus", paths) + note + _dump(exp)


def _bridge_sections(case: Case, paths: RenderPaths | None, fmt: str) -> dict[str, Any]:
    dests = _dests(case, paths, fmt)
    if dests.get("mock_data"):  # Megatron's --mock-data has no ConfigContainer field (bridge.BRIDGE_SECTIONS)
        raise StackRenderError(f"--mock-data: a Megatron-Bridge config has no field for Megatron's --mock-data, so --format "
                               f"{fmt} cannot state it; give --data-path and --tokenizer-model, or render --format "
                               "primus, torchrun or slurm")
    sections: dict[str, Any] = {"model": {}}
    # every precision field lives in mixed_precision: Bridge copies that section over the model and DDP configs
    # (constraints/stacks/bridge_precision.py), so a value left in `model` would be overwritten by the recipe's
    precision = {k: dests.pop(k) for k in list(dests) if k in PRECISION_DESTS}
    for dest, value in dests.items():
        homes = [s for s, keys in BRIDGE_SECTIONS.items() if dest in keys]
        for home in homes:
            sections.setdefault(home, {})[dest] = value
        if not homes or dest == "seq_length":
            sections["model"][dest] = value
    model = _core(sections["model"])
    if model.pop("swiglu", False):
        model["gated_linear_unit"] = True
        model["activation_func"] = {"_target_": "torch.nn.functional.silu", "_call_": False}
    if model.pop("quick_geglu", False):  # Megatron's --quick-geglu (argument_utils.py): quick_gelu as a gated unit
        model["gated_linear_unit"] = True
        model["activation_func"] = {"_target_": QUICK_GELU_TARGET, "_call_": False}
    if model.pop("untie_embeddings_and_output_weights", False):
        model["share_embeddings_and_output_weights"] = False
    sections["model"] = model
    fields = fields_from_dests(precision)
    sections["mixed_precision"] = recipe_name(fields) or fields  # a registered recipe when one is exactly these
    return sections


def render_bridge(case: Case, paths: RenderPaths | None = None) -> str:
    """A Megatron-Bridge ConfigContainer YAML (model / train / optimizer / ddp / dataset / ... sections)."""
    return _header_for(case, "bridge", paths) + _dump(_bridge_sections(case, paths, "bridge"))


def render_bridge_overrides(case: Case, paths: RenderPaths | None = None) -> str:
    """The same recipe as Megatron-Bridge `section.field=value` overrides, one per line."""
    if case.model.activation == Activation.quick_geglu:
        raise StackRenderError("--format bridge-overrides: the overrides grammar has no callables, so it cannot name the "
                               "quick_gelu gate of this model's gated activation; render --format bridge")
    lines = []
    for section, body in _bridge_sections(case, paths, "bridge-overrides").items():
        if isinstance(body, dict):
            for key, value in body.items():
                if isinstance(value, dict):
                    continue  # activation_func's _target_: the overrides grammar has no callables
                lines.append(f"{section}.{key}={hydra_value(value, PATH_OPTION_OF_DEST.get(key, f'{section}.{key}'))}")
        else:
            lines.append(f"{section}={hydra_value(body, section)}")
    return _header_for(case, "bridge-overrides", paths) + "\n".join(lines) + "\n"


def render_yaml_cfg(case: Case, paths: RenderPaths | None = None) -> str:
    """Refused: Megatron-LM's `--yaml-cfg` path (d98e8a64 training/yaml_arguments.py `load_yaml`) replaces the parsed
    arguments with a namespace holding only the file's keys, without argparse's defaults, so `parse_args` stops at the
    first argument the file leaves out (`args.disable_msc_deprecated`, arguments.py) and `core_config_from_args`
    raises "Missing argument" for every TransformerConfig field it lacks. A file of the recipe's own settings cannot
    run there; `check` still reads such files (as the recipe they describe on argparse's defaults)."""
    raise StackRenderError("--format yaml-cfg: Megatron-LM's --yaml-cfg loader (yaml_arguments.load_yaml) keeps only "
                           "the file's keys, without argparse's defaults, and stops at the first argument the file "
                           "leaves out; render --format torchrun or slurm (the same arguments on the command line)")


WRITERS = {"primus": render_primus, "bridge": render_bridge, "bridge-overrides": render_bridge_overrides,
           "yaml-cfg": render_yaml_cfg}


def render_stack(case: Case, fmt: str, paths: RenderPaths | None = None) -> str:
    return WRITERS[fmt](case, paths)
