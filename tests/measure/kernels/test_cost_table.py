"""The cost table without torch: schema, lookup, atomic save, and the measure CLI's torch-free side."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from click.testing import CliRunner
from pydantic import ValidationError

from measure.kernels.cost_table import CostTable, CostTableError, Entry, Environment
from tests.helpers.builders import REPO

FP_A = "cuda:NVIDIA H100 80GB HBM3:sm90:torch2.13.0"
FP_B = "cpu:AMD EPYC:avx2-t1:torch2.13.0+cpu"
KEY = "fwd/gemm:8192x1024x4096:bf16"


def _env(name: str = "NVIDIA H100 80GB HBM3", device_type: str = "cuda") -> Environment:
    return Environment(device_name=name, device_type=device_type, torch_version="2.13.0", host="node1")


def _entry(median_s: float) -> Entry:
    return Entry(median_s=median_s, num_reps=20, spread_s=1e-6, dtype_used="bf16", impl="torch.mm")


def test_round_trip_and_lookup_by_fingerprint(tmp_path):
    table = CostTable()
    table.add(FP_A, KEY, _entry(1.5e-3), _env())
    table.add(FP_B, KEY, _entry(0.25), _env("AMD EPYC", "cpu"))
    path = tmp_path / "t.json"
    table.save(path)
    back = CostTable.load(path)
    assert back == table
    assert back.lookup(FP_A, KEY) == 1.5e-3
    assert back.lookup(FP_B, KEY) == 0.25
    assert back.lookup(FP_A, "fwd/gemm:1x1x1:bf16") is None
    assert back.lookup("cuda:other:sm80:torch2.13.0", KEY) is None
    assert back.num_entries() == 2 and back.num_entries(FP_A) == 1
    assert back.fingerprints() == sorted([FP_A, FP_B])


def test_new_fingerprint_needs_environment():
    with pytest.raises(ValueError, match="environment"):
        CostTable().add(FP_A, KEY, _entry(1e-3))


def test_schema_forbids_unknown_fields_and_nonpositive_times():
    with pytest.raises(ValidationError):
        Entry(median_s=1e-3, num_reps=1, spread_s=0, dtype_used="bf16", flops=3)
    with pytest.raises(ValidationError):
        Entry(median_s=0.0, num_reps=1, spread_s=0, dtype_used="bf16")


def test_load_missing_and_corrupt_files_give_one_line_errors(tmp_path):
    assert CostTable.load(tmp_path / "none.json", missing_ok=True).num_entries() == 0
    with pytest.raises(CostTableError, match="does not exist"):
        CostTable.load(tmp_path / "none.json")
    bad = tmp_path / "bad.json"
    bad.write_text('{"devices": {')
    with pytest.raises(CostTableError, match="not valid JSON") as info:
        CostTable.load(bad)
    assert "\n" not in str(info.value)
    bad.write_text(json.dumps({"devices": {}, "extra": 1}))
    with pytest.raises(CostTableError, match="extra"):
        CostTable.load(bad)


def test_interrupted_save_leaves_the_old_table_intact(tmp_path, monkeypatch):
    path = tmp_path / "t.json"
    table = CostTable()
    table.add(FP_A, KEY, _entry(1e-3), _env())
    table.save(path)
    before = path.read_bytes()
    # a crash between writing the temp file and renaming it: os.replace never happens
    table.add(FP_A, "fwd/gemm:1x2x3:bf16", _entry(2e-3))

    def crash(*_args):
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(KeyboardInterrupt):
        table.save(path)
    monkeypatch.undo()
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["t.json"]  # the temp file was cleaned up
    # a temp file left by a killed process (no cleanup possible) does not disturb loading or saving
    (tmp_path / ".t.json.abc123.tmp").write_text('{"devices": {"half')
    assert CostTable.load(path).lookup(FP_A, KEY) == 1e-3
    table.save(path)
    assert CostTable.load(path).num_entries(FP_A) == 2


def test_measure_modules_import_without_torch():
    code = ("import sys; import measure.kernels.cost_table, measure.microbench.timing, measure.microbench.kernels, measure.kernels.fingerprint, "
            "shardplan.cli.measure; assert 'torch' not in sys.modules, 'torch imported'")
    result = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def test_measure_without_torch_says_how_to_install(tmp_path, monkeypatch):
    from shardplan.cli.measure import measure_command

    model = tmp_path / "tiny.yaml"
    model.write_text("num_layers: 1\nhidden_size: 32\nffn_hidden_size: 64\nnum_attention_heads: 2\nvocab_size: 128\n")
    monkeypatch.setitem(sys.modules, "torch", None)  # `import torch` now raises ImportError
    result = CliRunner().invoke(measure_command, ["--model", str(model), "--seq-length", "16", "--device", "cpu",
                                                  "--out", str(tmp_path / "t.json")])
    assert result.exit_code == 2  # one `error:` line, exit 2, as every refusal
    assert "error: torch is not installed; install the measure extra: pip install 'shardplan[measure]' torch==2.13.0" \
        in result.output
    assert not (tmp_path / "t.json").exists()


def test_list_shows_phase_keys_without_measuring(tmp_path):
    from shardplan.cli.measure import measure_command

    model = tmp_path / "tiny.yaml"
    model.write_text("num_layers: 1\nhidden_size: 32\nffn_hidden_size: 64\nnum_attention_heads: 2\nvocab_size: 128\n")
    result = CliRunner().invoke(measure_command, ["--model", str(model), "--seq-length", "16", "--tp", "1,2,3",
                                                  "--out", str(tmp_path / "t.json"), "--list"])
    assert result.exit_code == 0, result.output
    keys = result.output.split()
    # tokens = 16, h = 32, ffn = 64 SwiGLU: fc1 is (16, 128, 32) at TP=1 and (16, 64, 32) at TP=2
    assert "fwd/gemm:16x128x32:bf16" in keys and "fwd/gemm:16x64x32:bf16" in keys
    assert "bwd_wgrad/gemm:32x128x16:bf16" in keys  # wgrad of (m,n,k) is (k,n,m)
    assert "tp=3" in result.output  # heads=2 is not divisible by 3: reported, not measured
    assert not (tmp_path / "t.json").exists()


def test_per_element_seconds_from_the_largest_entry():
    table = CostTable()
    table.add(FP_A, "optimizer/optimizer_step:1000:fp32", _entry(5e-5), _env())  # launch-dominated
    table.add(FP_A, "optimizer/optimizer_step:1000000:fp32", _entry(2e-3))
    table.add(FP_A, "fwd/rmsnorm:8x4096:bf16", _entry(1e-5))
    assert table.per_element_s(FP_A, "optimizer", "optimizer_step", "fp32") == pytest.approx(2e-9)
    assert table.per_element_s(FP_A, "fwd", "rmsnorm", "bf16") == pytest.approx(1e-5 / (8 * 4096))
    assert table.per_element_s(FP_A, "fwd", "rmsnorm", "fp8") is None
    assert table.per_element_s(FP_B, "optimizer", "optimizer_step", "fp32") is None


def test_recipe_file_gives_exactly_its_shapes():
    from shardplan.cli.measure import measure_command

    recipe = REPO / "constraints" / "examples" / "llama3-70b-h100.yaml"
    result = CliRunner().invoke(measure_command, ["--recipe", str(recipe), "--out", "unused.json", "--list"])
    assert result.exit_code == 0, result.output
    keys = result.output.split()
    # Llama-3.1-70B at TP=8, seq 8192, mbs 1: QKV is 8192 tokens x (64/8 + 2*8/8)*128 = 1280 wide x 8192 hidden
    assert "fwd/gemm:8192x1280x8192:bf16" in keys
    # SP at TP=8: norms see 8192/8 = 1024 tokens
    assert "fwd/rmsnorm:1024x8192:bf16" in keys
    assert all(k.split("/")[0] in ("fwd", "bwd_dgrad", "bwd_wgrad", "optimizer") for k in keys)
