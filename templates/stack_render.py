"""`render --format primus|bridge|bridge-overrides|yaml-cfg`: a recipe as the config file of a stack on Megatron-LM.

Why from the Megatron argument list: `render --format torchrun` already writes the exact `pretrain_gpt.py`
arguments of a recipe (templates.recipe_args); each writer lays those same arguments out under the stack's
key names (constraints.stacks.keys), so `check` reads the file back to the same recipe (tests/
test_stack_configs_roundtrip.py). Layouts: constraints.stacks.primus / stack_bridge / stack_yaml_cfg.
"""
from __future__ import annotations

from typing import Any

import yaml

from constraints.case import Case
from constraints.spec import Activation
from constraints.stacks.bridge import BRIDGE_SECTIONS
from constraints.stacks.bridge_precision import PRECISION_DESTS, fields_from_dests, recipe_name
from constraints.stacks.keys import CORE_RENAMES, QUICK_GELU_TARGET, dests_from_args
from templates.recipe_args import RenderPaths, recipe_to_megatron_args

STACK_FORMATS: tuple[str, ...] = ("primus", "bridge", "bridge-overrides", "yaml-cfg")

class StackRenderError(ValueError):
    """A recipe this stack's config cannot state; one line for the user."""


def _dests(case: Case, paths: RenderPaths | None) -> dict[str, Any]:
    return dests_from_args(recipe_to_megatron_args(case.model, case.job, case.recipe, paths))


def _core(dests: dict[str, Any]) -> dict[str, Any]:
    """argparse dests -> Megatron-Core field names (GQA implied by num_query_groups, SwiGLU by the activation)."""
    inverse = {v: k for k, v in CORE_RENAMES.items()}
    out: dict[str, Any] = {}
    for dest, value in dests.items():
        if dest == "group_query_attention":
            continue
        out[inverse.get(dest, dest)] = value
    return out


def _header(case: Case, fmt: str) -> str:
    r = case.recipe
    return (f"# shardplan render --format {fmt}: {case.model.name} on {case.placement.num_nodes} x "
            f"{case.placement.gpus_per_node} {case.placement.hardware}\n"
            f"# TP={r.tp} PP={r.pp} VPP={r.vpp} CP={r.cp} EP={r.ep} MBS={r.mbs}; check it with:\n"
            f"#   shardplan check FILE --hardware {case.placement.hardware} --nodes {case.placement.num_nodes} "
            f"--gpus-per-node {case.placement.gpus_per_node}\n")


def _dump(data: dict) -> str:
    return yaml.safe_dump(data, sort_keys=False, default_flow_style=False, width=120)


def render_primus(case: Case, paths: RenderPaths | None = None) -> str:
    """A Primus experiment: every argument in `overrides` (its keys are Megatron's argparse dests)."""
    dests = _dests(case, paths)
    exp = {"work_group": "shardplan", "exp_name": f"{case.model.name}-tp{case.recipe.tp}-pp{case.recipe.pp}",
           "workspace": "./output",
           "modules": {"pre_trainer": {"framework": "megatron", "config": "pre_trainer.yaml",
                                       "model": "language_model.yaml", "overrides": dests}}}
    note = ("# The model shape is stated in overrides; `model: language_model.yaml` is Primus's base model file, whose\n"
            "# other keys (left at Primus's defaults) are not part of this recipe.\n")
    return _header(case, "primus") + note + _dump(exp)


def _bridge_sections(case: Case, paths: RenderPaths | None) -> dict[str, Any]:
    dests = _dests(case, paths)
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
    return _header(case, "bridge") + _dump(_bridge_sections(case, paths))


def render_bridge_overrides(case: Case, paths: RenderPaths | None = None) -> str:
    """The same recipe as Megatron-Bridge `section.field=value` overrides, one per line."""
    if case.model.activation == Activation.quick_geglu:
        raise StackRenderError("--format bridge-overrides: the overrides grammar has no callables, so it cannot name the "
                               "quick_gelu gate of this model's gated activation; render --format bridge")
    lines = []
    for section, body in _bridge_sections(case, paths).items():
        if isinstance(body, dict):
            for key, value in body.items():
                if isinstance(value, dict):
                    continue  # activation_func's _target_: the overrides grammar has no callables
                lines.append(f"{section}.{key}={_override_value(value)}")
        else:
            lines.append(f"{section}={body}")
    return _header(case, "bridge-overrides") + "\n".join(lines) + "\n"


def _override_value(value: Any) -> str:
    if isinstance(value, list):
        return "[" + ",".join(_override_value(v) for v in value) + "]"
    text = yaml.safe_dump(value, default_flow_style=True).strip()
    return text.removesuffix("\n...").strip()


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
