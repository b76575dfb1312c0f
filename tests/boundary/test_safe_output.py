"""Outputs never clobber what is not ours: only regular files or new paths are written, a doomed write is
refused before the work, and concurrent `measure` runs on one cost table merge instead of the last writer
winning."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from boundary.errors import InputRefused
from boundary.write import atomic_write_text, check_output_dir, check_output_file
from measure.kernels.cost_table import CostTable, Entry, Environment
from tests.helpers.builders import REPO


def test_fifo_target_is_refused_and_kept(tmp_path):
    fifo = tmp_path / "out.sh"
    os.mkfifo(fifo)
    with pytest.raises(InputRefused, match="is a FIFO"):
        atomic_write_text(fifo, "x\n")
    with pytest.raises(InputRefused, match="is a FIFO"):
        check_output_file(fifo, "-o")
    assert fifo.is_fifo() and [p.name for p in tmp_path.iterdir()] == ["out.sh"]  # no temp file left


def test_symlink_to_a_device_is_refused_not_replaced(tmp_path):
    link = tmp_path / "null"
    link.symlink_to("/dev/null")
    with pytest.raises(InputRefused, match="character device"):
        atomic_write_text(link, "x\n")
    assert link.is_symlink() and os.readlink(link) == "/dev/null"


def test_symlink_to_a_regular_file_writes_through_and_keeps_the_link(tmp_path):
    real = tmp_path / "real.sh"
    real.write_text("old\n")
    link = tmp_path / "link.sh"
    link.symlink_to(real)
    atomic_write_text(link, "new\n")
    assert link.is_symlink() and real.read_text() == "new\n"


def test_regular_file_and_new_path_are_written(tmp_path):
    atomic_write_text(tmp_path / "a.txt", "1\n")
    atomic_write_text(tmp_path / "a.txt", "2\n")
    assert (tmp_path / "a.txt").read_text() == "2\n"


def test_output_dir_checks(tmp_path):
    check_output_dir(tmp_path / "new" / "deeper", "--render")  # created later; its parent is writable
    (tmp_path / "file").write_text("x")
    with pytest.raises(InputRefused, match="a file, not a folder"):
        check_output_dir(tmp_path / "file", "--render")
    os.mkfifo(tmp_path / "fifo")
    with pytest.raises(InputRefused, match="FIFO"):
        check_output_dir(tmp_path / "fifo", "--render")
    with pytest.raises(InputRefused, match="does not exist"):
        check_output_file(tmp_path / "missing" / "t.json", "--out")


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_unwritable_folder_is_refused_before_work(tmp_path):
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    with pytest.raises(InputRefused, match="permission denied"):
        check_output_dir(ro, "--render")


def test_solve_render_into_a_file_is_refused_before_the_solve(tmp_path):
    target = tmp_path / "notadir"
    target.write_text("keep me\n")
    p = subprocess.run([sys.executable, "-m", "shardplan", "solve", "--model", "Llama-3.1-8B", "--hardware",
                        "h100-sxm-80gb", "--nodes", "1", "--gpus-per-node", "8", "--seq-length", "4096",
                        "--global-batch-size", "64", "--render", str(target)], capture_output=True, text=True,
                       cwd=REPO, timeout=120)
    assert p.returncode == 2 and "Traceback" not in p.stderr and len(p.stderr.strip().splitlines()) == 1
    assert target.read_text() == "keep me\n"


def test_render_to_a_fifo_is_exit_2_and_the_fifo_stays(tmp_path):
    fifo = tmp_path / "train.sh"
    os.mkfifo(fifo)
    p = subprocess.run([sys.executable, "-m", "shardplan", "render", str(REPO / "constraints/examples/llama3-70b-h100.yaml"),
                        "-o", str(fifo)], capture_output=True, text=True, cwd=REPO, timeout=60)
    assert p.returncode == 2 and "is a FIFO" in p.stderr and "Traceback" not in p.stderr and fifo.is_fifo()


def _environment() -> Environment:
    return Environment(device_name="test cpu", device_type="cpu", torch_version="0", host="h")


def test_save_merges_what_another_run_saved(tmp_path):
    path = tmp_path / "t.json"
    a, b = CostTable(), CostTable()
    a.add("fp", "k1", Entry(median_s=1e-3, num_reps=3, spread_s=0, dtype_used="bf16"), _environment())
    b.add("fp", "k2", Entry(median_s=2e-3, num_reps=3, spread_s=0, dtype_used="bf16"), _environment())
    a.save(path)
    b.save(path)  # b never read a's entry: last-writer-wins would drop k1
    assert sorted(CostTable.load(path).devices["fp"].entries) == ["k1", "k2"]
    assert b.has("fp", "k1")  # and b now knows k1, so it will not measure it again


_WRITER = textwrap.dedent("""
    import sys
    from measure.kernels.cost_table import CostTable, Entry, Environment
    path, tag, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    env = Environment(device_name="test cpu", device_type="cpu", torch_version="0", host="h")
    table = CostTable.load(path, missing_ok=True)
    for i in range(n):
        table.add("fp", f"{tag}-{i}", Entry(median_s=1e-3, num_reps=3, spread_s=0, dtype_used="bf16"), env)
        table.save(path)  # a save after every entry, as measure does under load
""")


def test_two_concurrent_writers_keep_every_entry(tmp_path):
    path = tmp_path / "table.json"
    n = 40
    procs = [subprocess.Popen([sys.executable, "-c", _WRITER, str(path), tag, str(n)], cwd=REPO,
                              env={**os.environ, "PYTHONPATH": str(REPO)}) for tag in ("a", "b")]
    assert [p.wait(timeout=120) for p in procs] == [0, 0]
    entries = json.loads(path.read_text())["devices"]["fp"]["entries"]
    assert len(entries) == 2 * n
    assert [p.name for p in tmp_path.iterdir()] == ["table.json"]  # no lock or temp file left behind
