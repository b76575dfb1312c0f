"""`render --format primus|bridge|bridge-overrides|yaml-cfg`: a recipe as the config file of a stack on Megatron-LM.

Why from the Megatron argument list: `render --format torchrun` already writes the exact `pretrain_gpt.py`
arguments of a recipe (templates.megatron_args); each writer lays those same arguments out under the stack's
key names (constraints.stack_keys), so `check` reads the file back to the same recipe (tests/
test_stack_configs_roundtrip.py). Layouts: constraints.stack_primus / stack_bridge / stack_yaml_cfg.
"""
from __future__ import annotations

from typing import Any

import yaml

from constraints.bridge_precision import PRECISION_DESTS, fields_from_dests, recipe_name
from constraints.case import Case
from constraints.spec import Activation
from constraints.stack_bridge import BRIDGE_SECTIONS
from constraints.stack_keys import CORE_RENAMES, QUICK_GELU_TARGET, dests_from_args
from templates.megatron_args import RenderPaths, recipe_to_megatron_args

STACK_FORMATS: tuple[str, ...] = ("primus", "bridge", "bridge-overrides", "yaml-cfg")

# Megatron-Core ModelParallelConfig fields (megatron/core/model_parallel_config.py): yaml-cfg's model_parallel
PARALLEL_FIELDS = frozenset("""tensor_model_parallel_size pipeline_model_parallel_size context_parallel_size
expert_model_parallel_size expert_tensor_parallel_size sequence_parallel bf16 fp16 tp_comm_overlap overlap_p2p_comm
cpu_offloading_num_layers gradient_accumulation_fusion hierarchical_context_parallel_sizes""".split())
# TransformerConfig fields the model shape and its per-layer options use: yaml-cfg's language_model
_LANGUAGE_PREFIXES = ("num_layers", "hidden_size", "ffn_hidden_size", "num_attention_heads", "num_query_groups",
                      "kv_channels", "normalization", "add_bias_linear", "add_qkv_bias", "hidden_dropout",
                      "attention_dropout", "num_moe_experts", "moe_", "recompute_", "distribute_saved_activations",
                      "fp8", "fp4", "qk_layernorm", "qk_l2_norm", "multi_latent_attention", "q_lora_rank",
                      "kv_lora_rank", "qk_head_dim", "qk_pos_emb_head_dim", "v_head_dim", "mtp_num_layers",
                      "window_size", "window_attn_skip_freq", "no_rope_freq", "layernorm_", "softmax_type",
                      "activation_func", "cross_entropy_loss_fusion", "attention_backend", "mamba_",
                      "hybrid_", "apply_layernorm_1p")


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
    # (constraints/bridge_precision.py), so a value left in `model` would be overwritten by the recipe's
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
    """A Megatron-LM `--yaml-cfg` file: language_model / model_parallel sections, the rest at the top level."""
    dests = _dests(case, paths)
    stages = dests.pop("num_virtual_stages_per_pipeline_rank", None)
    if stages is not None:  # validate_yaml derives VPP from layers per virtual stage only
        layers, pp = case.model.num_layers, case.recipe.pp
        if layers % (pp * stages):
            raise StackRenderError(f"--format yaml-cfg: Megatron's yaml path sets VPP from "
                                   f"num_layers_per_virtual_pipeline_stage, and {layers} layers do not split into "
                                   f"{pp} x {stages} equal stages; render another format or pick a VPP dividing them")
        dests["num_layers_per_virtual_pipeline_stage"] = layers // (pp * stages)
    if dests.get("quick_geglu"):
        raise StackRenderError("--format yaml-cfg: Megatron's yaml path has no gated quick-GELU (yaml_arguments.py "
                               "accepts activation_func swiglu, squaredrelu or gelu); render another format for this model")
    swiglu, squared = dests.pop("swiglu", False), dests.pop("squared_relu", False)
    out: dict[str, Any] = {"language_model": {"activation_func": "swiglu" if swiglu else "squaredrelu" if squared
                                              else "gelu"}, "model_parallel": {}}
    for dest, value in _core(dests).items():
        if dest in PARALLEL_FIELDS:
            out["model_parallel"][dest] = value
        elif dest.startswith(_LANGUAGE_PREFIXES):
            out["language_model"][dest] = value
        else:
            out[dest] = value
    return _header(case, "yaml-cfg") + _dump(out)


WRITERS = {"primus": render_primus, "bridge": render_bridge, "bridge-overrides": render_bridge_overrides,
           "yaml-cfg": render_yaml_cfg}


def render_stack(case: Case, fmt: str, paths: RenderPaths | None = None) -> str:
    return WRITERS[fmt](case, paths)
