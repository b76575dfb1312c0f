"""Names a user types for bundled things (a hardware profile, a model): forgiving where only one thing can be meant,
precise where not.

Why: `--hardware H100` or `h100` was refused although one bundled profile is an H100, a typo got a one-line dump of
every name (about 900 characters for the models) with no "did you mean", and a mistyped path (`./qwen/config.jsn`) was
called an unknown model instead of a missing file. The rules, shared by hardware/profile.py and
constraints/models/load.py:
- a name matches case-insensitively;
- a prefix that ends where a name's next word starts (`h100` -> `h100-sxm-80gb`, `gb200` -> `gb200-nvl72`) matches when
  exactly one name has it, never when two do (`mi3` is no name);
- otherwise the closest names are offered (difflib's ratio, the same measure `git` and `pip` suggest with).
"""
from __future__ import annotations

import difflib
from typing import Optional, Sequence

PATH_SUFFIXES = (".json", ".yaml", ".yml")


def exact_name(query: str, names: Sequence[str]) -> Optional[str]:
    """The bundled name equal to `query` but for case, or None (no prefix rule: for a hub id's repository part)."""
    return {n.lower(): n for n in names}.get(query.strip().lower())


def resolve_name(query: str, names: Sequence[str]) -> Optional[str]:
    """The one bundled name `query` means, or None."""
    wanted = query.strip().lower()
    by_lower = {n.lower(): n for n in names}
    if wanted in by_lower:
        return by_lower[wanted]
    family = [n for low, n in by_lower.items() if wanted and low.startswith(wanted) and low[len(wanted)] in "-_."]
    return family[0] if len(family) == 1 else None


def _closeness(query: str, name: str) -> float:
    """difflib's ratio against the whole name or its first word (`h900` is near `h100`, the first word of
    `h100-sxm-80gb`, more than it is near `b200`)."""
    first = name.replace("_", "-").split("-")[0]
    return max(difflib.SequenceMatcher(None, query, name).ratio(), difflib.SequenceMatcher(None, query, first).ratio())


def close_names(query: str, names: Sequence[str], limit: int = 3) -> list[str]:
    """Up to `limit` bundled names close to `query` (case-insensitive), best first; ties keep the names' order."""
    wanted = query.strip().lower()[:256]
    scored = sorted(((_closeness(wanted, n.lower()), i, n) for i, n in enumerate(names)), key=lambda s: (-s[0], s[1]))
    return [n for score, _, n in scored if score >= 0.6][:limit]


def hub_id_tail(text: str) -> Optional[str]:
    """The model name of a Hugging Face hub id (`meta-llama/Llama-3.1-70B` -> `Llama-3.1-70B`), or None when `text` is
    not shaped like one: exactly one `/`, not starting with `.`, `/` or `~`, and no config-file suffix. Hub ids are
    `<organisation>/<repository>` (huggingface_hub's repo_id); the bundled configs are named after the repository."""
    org, _, repo = text.strip().partition("/")
    if not org or not repo or "/" in repo or org[0] in "./~" or text.lower().endswith(PATH_SUFFIXES):
        return None
    return repo


def looks_like_path(text: str) -> bool:
    """A value meant as a file: it holds a path separator or ends like a config file."""
    return "/" in text or "\\" in text or text.lower().endswith(PATH_SUFFIXES)


def did_you_mean(query: str, names: Sequence[str]) -> str:
    """'; did you mean X or Y?' or '' when nothing is close."""
    close = close_names(query, names)
    if not close:
        return ""
    return "; did you mean " + (" or ".join(close) if len(close) < 3 else f"{close[0]}, {close[1]} or {close[2]}") + "?"
