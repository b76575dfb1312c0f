"""Legality rules: small pure functions, each mirroring one Megatron-LM check (named in its docstring).

Why pure functions over a RuleInput: `check` runs all of them on one recipe, and the solver runs the
same functions to build its legal tables, so the two can never disagree. A rule returns None when it
holds, else a Violation naming the rule, the offending values and the nearest fix.

This module is the registry: RULES lists every rule of the rule modules in one fixed order (world and
batch, pipeline split, attention / TP / SP / CP, attention backend, features, NVFP4, bf16 layers, hybrid Mamba, layer
variants, deterministic mode), so check_rules lists violations in the same order whatever was imported first. The machinery is in
constraints/rules/base.py; `from constraints.rules.registry import layers_split` keeps working for any rule.
Sources: docs/facts/megatron-rules.md (numbers in brackets).
"""
from __future__ import annotations

from types import ModuleType

from constraints.rules import attention as rules_attention
from constraints.rules import attention_backend as rules_attention_backend
from constraints.rules import bf16_layers as rules_bf16_layers
from constraints.rules import determinism as rules_determinism
from constraints.rules import features as rules_features
from constraints.rules import fp4 as rules_fp4
from constraints.rules import hybrid as rules_hybrid
from constraints.rules import layer_variants as rules_layer_variants
from constraints.rules import pipeline as rules_pipeline
from constraints.rules import world as rules_world
from constraints.rules.base import SPLIT_FIELDS, UNEVEN_SPLIT_FIELDS, Rule, RuleInput, Violation, divisors, nearest, rule, violation

__all__ = ["RULES", "Rule", "RuleInput", "SPLIT_FIELDS", "UNEVEN_SPLIT_FIELDS", "Violation", "check_rules", "divisors",
           "nearest", "recipe_free_violations", "rule", "violation"]

RULE_MODULES: tuple[ModuleType, ...] = (rules_world, rules_pipeline, rules_attention, rules_attention_backend,
                                        rules_features, rules_fp4, rules_bf16_layers, rules_hybrid, rules_layer_variants,
                                        rules_determinism)


def _rules_of(module: ModuleType) -> list[Rule]:
    """The @rule functions a module defines (not those it imports), in definition order."""
    return [fn for fn in vars(module).values()
            if callable(fn) and getattr(fn, "is_rule", False) and fn.__module__ == module.__name__]


RULES: list[Rule] = [fn for module in RULE_MODULES for fn in _rules_of(module)]
_BY_NAME = {fn.__name__: fn for fn in RULES}


def check_rules(x: RuleInput) -> list[Violation]:
    """Every rule's verdict on one input, in RULES order."""
    return [v for v in (fn(x) for fn in RULES) if v is not None]


def recipe_free_violations(x: RuleInput) -> list[Violation]:
    """The verdicts of the rules that read no recipe field (`rule(reads="")`): they hold or fail for every recipe of
    the job alike, so `solve` says them once for the job (an error empties the space; a warning, such as NVFP4's
    Transformer Engine version, applies to every answer) where `check` says them per script."""
    return [v for v in (fn(x) for fn in RULES if getattr(fn, "reads", None) == frozenset()) if v is not None]


def __getattr__(name: str):
    """Any rule by name, whichever rule module defines it (`from constraints.rules.registry import layers_split`)."""
    if name in _BY_NAME:
        return _BY_NAME[name]
    raise AttributeError(f"module 'constraints.rules.registry' has no attribute {name!r}")
