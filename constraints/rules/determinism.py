"""What Megatron-LM's `--deterministic-mode` requires of the arguments and of the launch environment.

Same contract as constraints/rules/registry.py (pure, registered with @rule). Why a module of its own: these are one
Megatron check, NVIDIA/Megatron-LM @ d98e8a64 megatron/training/determinism.py, which validate_args calls when
`--deterministic-mode` is set (arguments.py): `apply_determinism_to_args` asserts every option of
ARG_VALUES_REQUIRED_FOR_DETERMINISM (`cross_entropy_loss_fusion` False, `tp_comm_overlap` False), then
`apply_determinism_env` asserts that each determinism variable the launcher set holds a deterministic value:
every comma-separated token of NCCL_ALGO in {Ring, CollnetDirect, CollnetChain, ^NVLS} (Tree is refused),
NVTE_ALLOW_NONDETERMINISTIC_ALGO "0", CUBLAS_WORKSPACE_CONFIG ":4096:8" or ":16:8", and MAMBA_DETERMINISTIC /
CAUSAL_CONV1D_DETERMINISTIC starting with "1" when set. Unset variables are fine (Megatron fills the defaults).
A failed assert stops the run before training, so each is an illegal verdict. The environment is judged only when
check knows it (a script's), as for CUDA_DEVICE_MAX_CONNECTIONS.

A Megatron-Bridge config is validated by Bridge instead (`RuleInput.validated_by == "bridge"`; Megatron-Bridge @ 067f987d
src/megatron/bridge/training/config.py `_validate_and_apply_deterministic_mode`): cross-entropy loss fusion off ("Cross
Entropy Fusion is currently not deterministic"), and NCCL_ALGO set to exactly one of Tree, Ring, CollnetDirect,
CollnetChain, ^NVLS; it does not look at TP communication overlap. A config states only its own `env_vars`, so an
NCCL_ALGO it does not state (the launch shell may set it) is not judged.
"""
from __future__ import annotations

from typing import Optional

from constraints.rules.base import BRIDGE_VALIDATED, RuleInput, Violation, rule, violation

DETERMINISM_FLAG = "--deterministic-mode"
ACCEPTED_NCCL_ALGO_TOKENS = frozenset({"Ring", "CollnetDirect", "CollnetChain", "^NVLS"})
ACCEPTED_ENV_VALUES = {"NVTE_ALLOW_NONDETERMINISTIC_ALGO": ("0",), "CUBLAS_WORKSPACE_CONFIG": (":4096:8", ":16:8")}
SSM_DETERMINISM_VARIABLES = ("MAMBA_DETERMINISTIC", "CAUSAL_CONV1D_DETERMINISTIC")
BRIDGE_NCCL_ALGOS = ("Tree", "Ring", "CollnetDirect", "CollnetChain", "^NVLS")


def _environment_problem(env) -> Optional[tuple[str, str]]:
    """(message, fix) for the first determinism variable Megatron's apply_determinism_env refuses, else None."""
    algo = env.get("NCCL_ALGO")
    if algo is not None:
        tokens = [t.strip() for t in algo.split(",") if t.strip()]
        bad = [t for t in tokens if t not in ACCEPTED_NCCL_ALGO_TOKENS]
        if not tokens or bad:
            return (f"NCCL_ALGO={algo!r} under --deterministic-mode: each token must be one of "
                    f"{', '.join(sorted(ACCEPTED_NCCL_ALGO_TOKENS))}", "unset NCCL_ALGO (Megatron sets Ring) or export NCCL_ALGO=Ring")
    for name, accepted in ACCEPTED_ENV_VALUES.items():
        value = env.get(name)
        if value is not None and value not in accepted:
            return (f"{name}={value!r} is not a deterministic setting (accepted: {', '.join(accepted)})",
                    f"unset {name} or export {name}={accepted[0]}")
    for name in SSM_DETERMINISM_VARIABLES:
        value = env.get(name)
        if value and not value.startswith("1"):
            return (f"{name}={value!r} disables SSM determinism under --deterministic-mode", f"unset {name} or export {name}=1")
    return None


def _bridge_problem(x: RuleInput) -> Optional[tuple[str, str]]:
    """(message, fix) for what Megatron-Bridge's deterministic-mode validation refuses, else None (module docstring)."""
    if x.recipe.cross_entropy_loss_fusion:
        return ("deterministic_mode with cross_entropy_loss_fusion: Megatron-Bridge asserts 'Cross Entropy Fusion is "
                "currently not deterministic'", "set model.cross_entropy_loss_fusion: false")
    got = (x.env or {}).get("NCCL_ALGO")
    if got is not None and got not in BRIDGE_NCCL_ALGOS:
        # a config states only its own env_vars; the launch shell may set NCCL_ALGO, so only a stated value is judged
        return (f"deterministic_mode needs NCCL_ALGO to be one of {', '.join(BRIDGE_NCCL_ALGOS)} (Megatron-Bridge "
                f"asserts; got {got!r})", "set NCCL_ALGO: Ring in the config's env_vars")
    return None


@rule(reads="tp_comm_overlap cross_entropy_loss_fusion")
def deterministic_mode(x: RuleInput) -> Optional[Violation]:
    """--deterministic-mode asserts --tp-comm-overlap and --cross-entropy-loss-fusion off and a deterministic launch
    environment; a Megatron-Bridge config is held to Bridge's own checks (module docstring)."""
    if not x.flags.get(DETERMINISM_FLAG):
        return None
    if x.validated_by == BRIDGE_VALIDATED:
        problem = _bridge_problem(x)
        return violation("deterministic_mode", *problem) if problem else None
    on = [flag for flag, set_ in (("--tp-comm-overlap", x.recipe.tp_comm_overlap),
                                  ("--cross-entropy-loss-fusion", x.recipe.cross_entropy_loss_fusion)) if set_]
    if on:
        return violation("deterministic_mode", f"--deterministic-mode requires {' and '.join(on)} off (Megatron's "
                                               "apply_determinism_to_args asserts)", f"remove {' '.join(on)}")
    problem = _environment_problem(x.env) if x.env is not None else None
    if problem:
        return violation("deterministic_mode", *problem)
    return None
