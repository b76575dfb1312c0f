"""What `solve --render DIR` wrote into DIR, so the next render there removes or replaces only its own unchanged files.

Why a manifest and not SUMMARY.md: SUMMARY.md is a page for people and shows text from the model's name; read back as a
list of files, an injected row named a user's own script, and the next render deleted it. The manifest is JSON
written in the same atomic step as the scripts (boundary.write.atomic_write_folder) and records each file's SHA-256:
a later render removes a file only when the manifest lists it and its bytes are still the ones written (a script the
user filled in since is kept), and it writes over a file only on the same terms; any other file in the way is
refused in one line. A folder without a manifest (or with one that does not parse) holds nothing of ours.
"""
from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

from boundary.errors import InputRefused
from boundary.parse import load_json
from boundary.read import is_regular_file, read_bytes, read_text, reads_unrecorded

MANIFEST = ".shardplan-render.json"
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,254}")  # what render_files writes: no folder, no `..`, no dot file
_DIGEST = re.compile(r"[0-9a-f]{64}")


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def manifest_file(files: list[tuple[str, str, bool]]) -> tuple[str, str, bool]:
    """The manifest entry for atomic_write_folder: every file's name and the SHA-256 of the bytes written."""
    digests = {name: _sha256(text.encode()) for name, text, _ in files}
    return MANIFEST, json.dumps({"written_by": "shardplan solve --render", "files": digests}, indent=1) + "\n", False


def _listed(directory: Path) -> dict[str, str]:
    """name -> SHA-256 as the folder's manifest lists them; {} when there is none or it is not one we wrote."""
    path = directory / MANIFEST
    if not is_regular_file(path):
        return {}
    try:
        with reads_unrecorded():  # our own earlier output, which this render replaces: not an input
            data = load_json(read_text(path, "recipe", str(path)), "recipe", str(path))
    except InputRefused:
        return {}
    files = data.get("files") if isinstance(data, dict) else None
    if not isinstance(files, dict):
        return {}
    return {name: digest for name, digest in files.items()
            if isinstance(name, str) and _NAME.fullmatch(name) and isinstance(digest, str) and _DIGEST.fullmatch(digest)}


def removable(directory: Path) -> set[str]:
    """The files an earlier render wrote here that are still exactly as written (regular files, links not followed):
    the only ones a new render may remove or write over."""
    out = set()
    for name, digest in _listed(directory).items():
        path = directory / name
        if path.is_symlink() or not is_regular_file(path):
            continue
        try:
            with reads_unrecorded():
                if _sha256(read_bytes(path, "launch script", str(path))) == digest:
                    out.add(name)
        except InputRefused:  # grown past a script's size since: not as written
            continue
    return out


def refuse_foreign(directory: Path, names: list[str], ours: set[str], label: str) -> None:
    """Refuse to write over a file in `directory` that an earlier render did not write, or that was changed since."""
    for name in names:
        path = directory / name
        if (path.exists() or path.is_symlink()) and name not in ours:
            raise InputRefused(f"{label}: {path} is not a file an earlier render wrote here unchanged (see {MANIFEST}); "
                               "move it, or render into another folder")
