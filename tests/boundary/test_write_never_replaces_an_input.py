"""No output replaces a file the same command read (issue 33): `report check X -o X`, `report check --trace X`,
`report solve -o MODEL`, `sweep --report PROFILE` and `render -o` onto a file the script sources all exited 0 and
destroyed the input. boundary/read.py records each file a command run reads, boundary/write.py refuses a target that is
one of them by (st_dev, st_ino): one line, exit 2, the input byte for byte as it was, through symlinks and hard links."""
from __future__ import annotations

import os
import shutil

import pytest

from boundary.errors import InputRefused
from boundary.read import read_text, reads_recorded
from boundary.write import atomic_write_text, check_output_file
from tests.helpers.builders import REPO, hf_config, run_cli

EXAMPLE = REPO / "constraints" / "examples" / "llama3-70b-h100.yaml"
PROFILE = REPO / "hardware" / "profiles" / "h100-sxm-80gb.yaml"
SCRIPT = REPO / "tests" / "data" / "scripts" / "llama_fp8.sh"
JOB = ("--seq-length", "4096", "--global-batch-size", "64")


def _link(kind: str, target, path):
    (os.symlink if kind == "symlink" else os.link)(target, path)
    return path


@pytest.mark.parametrize("how", ["same path", "symlink", "hard link"])
def test_a_write_onto_a_file_read_in_the_same_run_is_refused(tmp_path, how):
    src = tmp_path / "recipe.yaml"
    src.write_text("a: 1\n")
    out = src if how == "same path" else _link(how, src, tmp_path / "out.html")
    with reads_recorded():
        read_text(src, "recipe")
        with pytest.raises(InputRefused, match=r"^-o: .* is a file this command reads"):
            atomic_write_text(out, "<html>", "-o")
    assert src.read_text() == "a: 1\n" and sorted(p.name for p in tmp_path.iterdir()) == sorted({"recipe.yaml", out.name})
    atomic_write_text(out, "ok")  # outside a command run nothing is recorded: a program may rewrite what it read


def test_an_update_in_place_and_an_unread_file_are_written(tmp_path):
    table, other = tmp_path / "table.json", tmp_path / "other.json"
    table.write_text("{}")
    other.write_text("{}")
    with reads_recorded():
        read_text(table, "cost table")
        atomic_write_text(table, '{"a": 1}', updates_input=True)  # the cost table `measure` merges into
        atomic_write_text(other, '{"b": 2}')
    assert table.read_text() == '{"a": 1}' and other.read_text() == '{"b": 2}'


def test_check_output_file_refuses_a_named_input_before_it_is_read(tmp_path):
    model = tmp_path / "model.json"
    model.write_text("{}")
    alias = _link("hard link", model, tmp_path / "alias.html")
    with pytest.raises(InputRefused, match=r"^--output: .*alias.html is a file this command reads \(as .*model.json\)"):
        check_output_file(alias, "--output", inputs=["Llama-3.1-8B", None, str(model)])
    check_output_file(tmp_path / "new.html", "--output", inputs=[str(model)])


def _refused(args, inputs, cwd=None):
    before = {p: p.read_bytes() for p in inputs}
    rc, out, err = run_cli(*args, cwd=cwd)
    assert rc == 2, (rc, err)
    errors = [line for line in err.splitlines() if line.startswith("error: ")]  # after render's notes, if any
    assert len(errors) == 1 and errors[0] == err.splitlines()[-1], err
    assert "is a file this command reads" in errors[0] and "write elsewhere" in errors[0]
    assert {p: p.read_bytes() for p in inputs} == before
    return err


def test_report_check_never_writes_over_its_recipe(tmp_path):
    recipe = tmp_path / "r.yaml"
    shutil.copy(EXAMPLE, recipe)
    _refused(["report", "check", str(recipe), "-o", str(recipe)], [recipe])
    _refused(["report", "check", str(recipe), "-o", str(tmp_path / "a.html"), "--trace", str(recipe)], [recipe])
    _refused(["report", "check", str(recipe), "-o", str(_link("symlink", recipe, tmp_path / "s.html"))], [recipe])
    assert not (tmp_path / "a.html").exists()  # refused before any work: nothing else written either


def test_report_solve_and_sweep_never_write_over_the_model_or_the_profile(tmp_path):
    model = tmp_path / "cfg.json"
    hf_config(tmp_path)
    profile = tmp_path / "hw.yaml"
    shutil.copy(PROFILE, profile)
    _refused(["report", "solve", "--model", str(model), "--hardware", "h100-sxm-80gb", "--nodes", "1", *JOB,
              "-o", str(model)], [model])
    _refused(["sweep", "--model", "Llama-3.1-8B", "--hardware", f"h100-sxm-80gb,{profile}", "--nodes", "1", *JOB,
              "--report", str(_link("hard link", profile, tmp_path / "p.html"))], [profile])
    _refused(["sweep", "--model", str(model), "--hardware", "h100-sxm-80gb", "--nodes", "1", *JOB,
              "--report", str(model)], [model])


def test_render_never_writes_over_a_file_the_script_sources(tmp_path):
    """Only the write itself knows a sourced file (the script names it): caught there, still one line and exit 2."""
    env = tmp_path / "env.sh"
    env.write_text("TP_SIZE=2\n")
    script = tmp_path / "train.sh"
    script.write_text(SCRIPT.read_text().replace("TP_SIZE=${TP_SIZE:-2}", "source ./env.sh"))
    args = ["--hardware", "h100-sxm-80gb", "--force"]
    _refused(["render", "train.sh", *args, "-o", "env.sh"], [env, script], cwd=tmp_path)
    _refused(["report", "check", "train.sh", "--hardware", "h100-sxm-80gb", "-o", "env.sh"], [env, script], cwd=tmp_path)
    rc, _, err = run_cli("render", "train.sh", *args, "-o", "out.sh", cwd=tmp_path)
    assert rc == 0, err  # the same render elsewhere is written
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def test_two_outputs_on_one_file_are_refused(tmp_path):
    rc, _, err = run_cli("report", "check", str(EXAMPLE), "-o", str(tmp_path / "a"), "--trace", str(tmp_path / "a"))
    assert rc == 2 and err == f"error: --trace: {tmp_path / 'a'} is also --output's file; give each output its own path\n"
