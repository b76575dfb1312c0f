"""Atomic writes (temp file + os.replace) keep an existing file's mode, give a new file the umask's mode and leave no
temp file behind."""
from __future__ import annotations

import os
import stat

import pytest

# --- finding 14: atomic writes keep the file's mode ------------------------------------------------------

@pytest.mark.parametrize("mode", [0o644, 0o640, 0o755])
def test_atomic_write_keeps_the_existing_mode(tmp_path, mode):
    from constraints.case import atomic_write_text

    path = tmp_path / "table.json"
    path.write_text("{}")
    os.chmod(path, mode)
    atomic_write_text(path, '{"a": 1}')
    assert path.read_text() == '{"a": 1}' and stat.S_IMODE(path.stat().st_mode) == mode


@pytest.mark.parametrize("umask,mode", [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664)])
def test_atomic_write_gives_a_new_file_the_umask_mode(tmp_path, umask, mode):
    from constraints.case import atomic_write_text

    old = os.umask(umask)
    try:
        atomic_write_text(tmp_path / "SUMMARY.md", "x\n")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "SUMMARY.md").stat().st_mode) == mode
    assert [p.name for p in tmp_path.iterdir()] == ["SUMMARY.md"]  # no temp file left behind


