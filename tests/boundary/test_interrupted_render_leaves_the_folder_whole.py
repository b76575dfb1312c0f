"""`solve --render DIR` interrupted half-way left 17 of 20 scripts, no SUMMARY.md and once a stray `.tmp` file
(found by QA with `timeout -s INT`). The folder is now written all or nothing (boundary.write.atomic_write_folder):
a staging folder beside it, then renames with Ctrl-C held."""
from __future__ import annotations

import pytest

import boundary.write as write
from boundary.write import atomic_write_folder


def _files(n: int, tag: str) -> list[tuple[str, str, bool]]:
    return [(f"{i:02d}-model.sh", f"#!/bin/bash\n# {tag} {i}\n", True) for i in range(1, n + 1)] + [("SUMMARY.md", f"{tag}\n", False)]


def test_a_complete_write_replaces_the_set_and_removes_what_it_is_told(tmp_path):
    atomic_write_folder(tmp_path, _files(3, "old"))
    atomic_write_folder(tmp_path, _files(2, "new"), remove={"03-model.sh"})
    assert sorted(p.name for p in tmp_path.iterdir()) == ["01-model.sh", "02-model.sh", "SUMMARY.md"]
    assert (tmp_path / "SUMMARY.md").read_text() == "new\n" and "new 2" in (tmp_path / "02-model.sh").read_text()
    assert (tmp_path / "01-model.sh").stat().st_mode & 0o100


def test_an_interrupt_while_staging_leaves_the_earlier_folder_as_it_was(tmp_path, monkeypatch):
    atomic_write_folder(tmp_path, _files(3, "old"))
    before = {p.name: p.read_text() for p in tmp_path.iterdir()}
    real, calls = write.atomic_write_text, []

    def interrupted(path, text, label=None, executable=False):
        calls.append(path)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return real(path, text, label, executable)

    monkeypatch.setattr(write, "atomic_write_text", interrupted)
    with pytest.raises(KeyboardInterrupt):
        atomic_write_folder(tmp_path, _files(5, "new"), remove={"03-model.sh"})
    assert {p.name: p.read_text() for p in tmp_path.iterdir()} == before  # no staging folder, no new script, old kept


def test_a_target_that_is_not_a_regular_file_is_refused_before_anything_is_written(tmp_path):
    (tmp_path / "01-model.sh").mkdir()
    with pytest.raises(Exception, match="01-model.sh"):
        atomic_write_folder(tmp_path, _files(2, "new"))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["01-model.sh"]
