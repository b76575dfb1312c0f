"""Shell completion of model and hardware names (click `shell_complete` callbacks).

Enable it with click's environment variable, e.g. for bash: `eval "$(_SHARDPLAN_COMPLETE=bash_source shardplan)"`
(zsh: zsh_source, fish: fish_source). A value that looks like a path completes as a path (own configs / profiles).
"""
from __future__ import annotations

from click.shell_completion import CompletionItem

from constraints.models.load import bundled_models
from hardware.profile import available_profiles


def _names(kind: str) -> list[str]:
    if kind == "model":
        return list(bundled_models())

    return list(available_profiles())


def _complete(kind: str, incomplete: str) -> list[CompletionItem]:
    if "/" in incomplete or incomplete.startswith("."):
        return [CompletionItem(incomplete, type="file")]
    low = incomplete.lower()
    return [CompletionItem(n) for n in _names(kind) if n.lower().startswith(low)]


def complete_model(ctx, param, incomplete: str) -> list[CompletionItem]:
    """Bundled model names starting with `incomplete` (case-insensitive, as --model accepts them)."""
    return _complete("model", incomplete)


def complete_hardware(ctx, param, incomplete: str) -> list[CompletionItem]:
    """Bundled hardware profile names starting with `incomplete`."""
    return _complete("hardware", incomplete)
