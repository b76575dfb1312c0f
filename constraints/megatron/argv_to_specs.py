"""Turn a Megatron-LM `pretrain_gpt.py` argument list into shardplan's ModelSpec, JobSpec and Recipe.

Why its own module: `shardplan check` judges hand-written Megatron configurations, so the specs must say
exactly what Megatron would run, and this is the one entry point that does it. The steps, one idea each:
constraints.megatron.tokenize (argparse splitting and flag sorting), megatron_model, megatron_recipe and
megatron_job (each spec from the flags, with Megatron's own defaults), megatron_patterns (the small
languages inside flag values), megatron_errors (the one-line error and its flag-worded pydantic messages).
Flags are sorted three ways (constraints.megatron.flags): modelled or read by rules; known to have no
effect (`ignored_flags`); everything else (`unknown_flags`, reported to the user, never dropped silently).
"""
from __future__ import annotations

from typing import Any, Optional

from pydantic import BaseModel, ConfigDict, ValidationError

from constraints.megatron.errors import MegatronArgsError, error_from_validation
from constraints.megatron.hybrid_flags import ignored_num_layers_note
from constraints.megatron.job import job_from_flags
from constraints.megatron.model import model_from_flags
from constraints.megatron.recipe import recipe_fields
from constraints.megatron.refusals import Refusal, refusals
from constraints.megatron.tokenize import tokenize_args
from constraints.megatron.unmodelled import not_modelled_values
from constraints.megatron.vocab import vocab_from_tokenizer
from constraints.spec import JobSpec, ModelSpec, Recipe

# Entry points that build Megatron's GPTModel, and pretrain_gpt.py's args_defaults tokenizer (pretrain_gpt.py @ d98e8a64).
GPT_ENTRY_POINTS = ("pretrain_gpt.py", "pretrain_hybrid.py", "pretrain_mamba.py")
GPT_TOKENIZER_DEFAULT = "GPT2BPETokenizer"

__all__ = ["MegatronArgsError", "MegatronConfig", "parse_megatron_args", "tokenize_args"]


class MegatronConfig(BaseModel):
    """What a Megatron command line says, in shardplan's terms, plus everything it could not place."""

    model_config = ConfigDict(extra="forbid")
    model: Optional[ModelSpec]  # None when the model flags are incomplete (see model_missing)
    model_missing: list[str]  # required model flags that were absent, e.g. ["--vocab-size"]
    model_name: str
    job: JobSpec
    recipe: Recipe
    unknown_flags: list[str]  # not understood by shardplan: unknown Megatron flags, non-Megatron flags, stray values
    ignored_flags: list[str]  # Megatron flags known to have no effect on legality, memory or speed
    raw: dict[str, Any]  # every parsed flag (Megatron spelling) -> its value; switches -> True
    notes: list[str] = []  # where a value came from when the arguments do not state it (e.g. the tokenizer's vocab)
    refusals: list[Refusal] = []  # what Megatron itself refuses (argparse / validate_args exits): illegal verdicts


def parse_megatron_args(argv: list[str], world_size: Optional[int] = None, model_name: Optional[str] = None,
                        entry_point: Optional[str] = None, argument_file: bool = False) -> MegatronConfig:
    """Specs for a Megatron-LM argument list (the part after pretrain_gpt.py).

    `world_size` is only needed when --global-batch-size is absent (Megatron then uses MBS x DP);
    `entry_point` (e.g. "pretrain_gpt.py") sets the default tokenizer (GPT2BPETokenizer for pretrain_gpt.py);
    `argument_file`: the list is a plain argument file, which one of GPT_ENTRY_POINTS will read, and every one of
    them defaults to GPT2BPETokenizer, so the file's tokenizer default is that too."""
    unrecognized: list[str] = []
    megatron_lm_launch = entry_point is not None or argument_file  # Megatron-LM's own argparse reads the list
    raw, ignored, unknown = tokenize_args([str(a) for a in argv], unrecognized, choices_exit=megatron_lm_launch)
    name = model_name or "megatron-args"
    notes: list[str] = []
    gpt_default = entry_point in GPT_ENTRY_POINTS or (argument_file and entry_point is None)
    padded = raw.get("--padded-vocab-size")
    if padded is not None:
        # argument_utils.py gpt_config_from_args: --padded-vocab-size is the embedding's row count as given
        # (should_pad_vocab False), whatever the tokenizer or --vocab-size say; the recipe pads by 1 (recipe_fields)
        vocab, note = padded, f"vocabulary {padded:,} from --padded-vocab-size, used unpadded (Megatron: should_pad_vocab off)"
    else:
        vocab, note = vocab_from_tokenizer(raw, GPT_TOKENIZER_DEFAULT if gpt_default else None)
    if note:
        notes.append(note)
    unknown += not_modelled_values(raw)
    layers_note = ignored_num_layers_note(raw)
    if layers_note:
        notes.append(layers_note)
    model, missing = model_from_flags({**raw, "--vocab-size": vocab} if vocab is not None else raw, name)
    fields: dict[str, Any] = {}
    try:
        fields = recipe_fields(raw, raw.get("--num-layers"))
        recipe = Recipe(**fields)
    except ValidationError as e:
        raise error_from_validation(e, {**fields, "num_layers_recompute": raw.get("--recompute-num-layers")}) from None
    job = job_from_flags(raw, recipe, world_size)
    return MegatronConfig(model=model, model_missing=missing, model_name=name, job=job, recipe=recipe,
                          unknown_flags=unknown, ignored_flags=ignored, raw=raw, notes=notes,
                          refusals=refusals(raw, unrecognized, entry_point, megatron_lm_launch=megatron_lm_launch))
