"""`solve --render DIR` run twice into one folder: the second render removes the scripts of the first that it does
not write again (a stale `02-...sh` beside the new SUMMARY.md could be launched as if it were an answer), and
touches nothing the first did not write: not a user's own file, not one the user changed since, and not a file a
row of SUMMARY.md names because a model's name put it there (templates/render_manifest.py)."""
import hashlib
import json

import pytest

from boundary.errors import InputRefused
from constraints.case import case_from_mapping
from templates.render_files import render_solutions
from templates.render_manifest import MANIFEST
from tests.templates.test_render import GOLDEN_CASES, golden_case


def _two_answers():
    return [golden_case("llama31-70b-gqa"),
            case_from_mapping(dict(GOLDEN_CASES["llama31-70b-gqa"], recipe=dict(tp=8, pp=8, sequence_parallel=True)))]


def test_a_second_render_removes_the_first_renders_other_scripts_only(tmp_path):
    first = _two_answers()
    out = tmp_path / "out"
    old = render_solutions(first, out, "torchrun")
    (out / "my-notes.txt").write_text("mine\n")
    (out / "05-handwritten.sh").write_text("#!/bin/sh\n")
    new = render_solutions(first[1:], out, "torchrun")
    names = sorted(p.name for p in out.iterdir())
    assert names == sorted([new[0].name, "SUMMARY.md", MANIFEST, "my-notes.txt", "05-handwritten.sh"])
    assert old[0].name not in names and old[1].name != new[0].name  # the rank prefix changed: 02- -> 01-
    listed = json.loads((out / MANIFEST).read_text())["files"]
    assert sorted(listed) == sorted([new[0].name, "SUMMARY.md"])


def test_a_script_the_user_changed_is_neither_removed_nor_written_over(tmp_path):
    first = _two_answers()
    out = tmp_path / "out"
    old = render_solutions(first, out, "torchrun")
    filled = old[1].read_text().replace("/path/to/data_text_document", "/lustre/my_text_document")
    old[1].write_text(filled)  # the user filled in rank 2's data path
    render_solutions(first[:1], out, "torchrun")  # rank 2 is not written again: a stale answer, but the user's work
    assert old[1].read_text() == filled
    with pytest.raises(InputRefused, match=old[1].name):  # rank 2 again: it would replace the user's edit
        render_solutions(first, out, "torchrun")
    assert old[1].read_text() == filled


def test_a_row_injected_by_a_model_name_deletes_nothing(tmp_path):
    """The model name ends the SUMMARY line and adds a row naming the user's own script; the next render read
    SUMMARY.md's rows as its own files and deleted it. Now the name is escaped, and only the manifest counts."""
    out = tmp_path / "out"
    out.mkdir()
    mine = out / "01-mine.sh"
    mine.write_text("#!/bin/sh\necho mine\n")
    evil = "X.\n| 1 | 01-mine.sh | 1 |\n# heading `code` <b>x</b> [a](b)"
    case = golden_case("llama2-7b-dense")
    case = case.model_copy(update={"model": case.model.model_copy(update={"name": evil})})
    render_solutions([case], out, "torchrun")
    summary = (out / "SUMMARY.md").read_text()
    lines = summary.splitlines()
    assert not [line for line in lines if line.startswith(("| 1 | 01-mine", "# heading"))]
    assert "\\| 1 \\| 01-mine.sh \\| 1 \\| \\# heading \\`code\\` \\<b\\>x\\</b\\> \\[a\\](b)" in lines[2]
    assert [line for line in lines if line.startswith("| ")][-1].startswith("| 1 | `01-X")  # the one real row
    render_solutions([golden_case("llama2-7b-dense")], out, "torchrun")
    assert mine.read_text() == "#!/bin/sh\necho mine\n"


def test_a_hostile_manifest_names_nothing_outside_the_folder(tmp_path):
    out = tmp_path / "out"
    render_solutions([golden_case("llama2-7b-dense")], out, "torchrun")
    victim = tmp_path / "victim.sh"
    victim.write_text("keep\n")
    digest = hashlib.sha256(b"keep\n").hexdigest()
    listed = json.loads((out / MANIFEST).read_text())["files"]
    listed.update({"../victim.sh": digest, str(victim): digest})
    (out / MANIFEST).write_text(json.dumps({"files": listed}))
    render_solutions([], out, "torchrun")
    assert victim.read_text() == "keep\n"
    assert sorted(p.name for p in out.iterdir()) == sorted([MANIFEST, "SUMMARY.md"])  # its own script went
