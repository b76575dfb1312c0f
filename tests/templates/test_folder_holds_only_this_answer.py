"""`solve --render DIR` run twice into one folder: the second render removes the scripts of the first that it does
not write again (a stale `02-...sh` beside the new SUMMARY.md could be launched as if it were an answer), and
touches nothing the earlier SUMMARY.md does not list."""
from constraints.case import case_from_mapping
from templates.render_files import render_solutions
from tests.templates.test_render import GOLDEN_CASES, golden_case


def test_a_second_render_removes_the_first_renders_other_scripts_only(tmp_path):
    first = [golden_case("llama31-70b-gqa"),
             case_from_mapping(dict(GOLDEN_CASES["llama31-70b-gqa"], recipe=dict(tp=8, pp=8, sequence_parallel=True)))]
    out = tmp_path / "out"
    old = render_solutions(first, out, "torchrun")
    (out / "my-notes.txt").write_text("mine\n")
    (out / "05-handwritten.sh").write_text("#!/bin/sh\n")
    new = render_solutions(first[1:], out, "torchrun")
    names = sorted(p.name for p in out.iterdir())
    assert names == sorted([new[0].name, "SUMMARY.md", "my-notes.txt", "05-handwritten.sh"])
    assert old[0].name not in names and old[1].name != new[0].name  # the rank prefix changed: 02- -> 01-
