"""`shardplan measure --device cpu --out hardware/measured/h100-sxm-80gb.json` wrote a CPU's kernel times where every
H100 projection looks, and `check` then read 250 tokens/s/GPU instead of 13,285, saying nothing (found by QA). The
bundled-table lookup now never takes a CPU fingerprint, and `measure` refuses a CPU table into hardware/measured/."""
from __future__ import annotations

import pytest
from click.testing import CliRunner

import measure.kernels.measured_tables as mt
from constraints.models.load import load_model
from constraints.spec import JobSpec, Placement, Precision, Recipe
from hardware.profile import load_profile
from measure.kernels.cost_table import CostTable, Entry, Environment
from measure.kernels.layer_ops import LayerKind, layer_ops
from measure.projection.project import project
from shardplan.cli.main import cli

H100 = load_profile("h100-sxm-80gb")
MODEL = load_model("Llama-3.1-8B")
JOB = JobSpec(seq_length=4096, global_batch_size=32, precision=Precision.bf16)
PLACE = Placement(hardware="h100-sxm-80gb", num_nodes=1, gpus_per_node=8)
RECIPE = Recipe(tp=2, pp=1, sequence_parallel=True)


def _cpu_table() -> CostTable:
    table = CostTable()
    env = Environment(device_name="AMD EPYC", device_type="cpu", compute_capability=None, torch_version="2.13.0+cpu", host="test")
    for pop in layer_ops(MODEL, JOB, RECIPE, LayerKind.dense):
        table.add("cpu:AMD EPYC:avx2-t8:torch2.13.0+cpu", pop.key,
                  Entry(median_s=5e-2, num_reps=3, spread_s=0.0, dtype_used="bf16"), environment=env)
    return table


def test_a_cpu_table_in_the_profile_folder_is_ignored_and_said(tmp_path, monkeypatch):
    monkeypatch.setattr(mt, "MEASURED_DIR", tmp_path)
    analytic = project(MODEL, JOB, RECIPE, PLACE, H100)
    _cpu_table().save(tmp_path / "h100-sxm-80gb.json")
    assert mt.bundled_table("h100-sxm-80gb") == (None, None)
    assert "only CPU measurements" in mt.load_errors["h100-sxm-80gb"]
    assert project(MODEL, JOB, RECIPE, PLACE, H100).iteration_time_s == pytest.approx(analytic.iteration_time_s, rel=1e-12)


def test_measure_refuses_a_cpu_table_into_the_profile_folder(tmp_path):
    model = tmp_path / "tiny.yaml"
    model.write_text("name: tiny\nnum_layers: 2\nhidden_size: 256\nffn_hidden_size: 512\nnum_attention_heads: 4\n"
                     "num_query_groups: 4\nvocab_size: 1024\n")
    out = mt.MEASURED_DIR / "h100-sxm-80gb.json"
    before = out.read_bytes()
    res = CliRunner().invoke(cli, ["measure", "--model", str(model), "--seq-length", "128", "--device", "cpu",
                                   "--out", str(out)])
    assert res.exit_code == 2 and "a CPU's kernel times are not a GPU's" in res.stderr
    assert out.read_bytes() == before


def test_measure_refuses_nvfp4_before_measuring(tmp_path):
    model = tmp_path / "tiny.yaml"
    model.write_text("name: tiny\nnum_layers: 2\nhidden_size: 256\nffn_hidden_size: 512\nnum_attention_heads: 4\n"
                     "num_query_groups: 4\nvocab_size: 1024\n")
    out = tmp_path / "t.json"
    res = CliRunner().invoke(cli, ["measure", "--model", str(model), "--seq-length", "128", "--device", "cpu",
                                   "--precision", "nvfp4", "--out", str(out)])
    assert res.exit_code == 2 and "--precision nvfp4" in res.stderr and not out.exists()


def test_check_names_a_measured_table_that_prices_it(tmp_path, monkeypatch):
    """A device measured with `shardplan measure` (not the shipped published table) changes every projection of the
    profile: check says so, naming the file and the device."""
    import shardplan

    monkeypatch.setattr(mt, "MEASURED_DIR", tmp_path)
    recipe = {"model": "Llama-3.1-8B", "hardware": "h100-sxm-80gb", "nodes": 1, "gpus_per_node": 8,
              "job": {"seq_length": 4096, "global_batch_size": 32}, "recipe": {"tp": 2, "sequence_parallel": True}}
    assert not [w for w in shardplan.check(recipe).warnings if w.rule == "measured_kernel_table"]
    table = CostTable()
    env = Environment(device_name="NVIDIA H100 80GB HBM3", device_type="cuda", compute_capability="9.0",
                      torch_version="2.13.0", host="test")
    for pop in layer_ops(MODEL, JOB, RECIPE, LayerKind.dense):
        table.add("cuda:NVIDIA H100 80GB HBM3:sm90:torch2.13.0", pop.key,
                  Entry(median_s=1e-4, num_reps=3, spread_s=0.0, dtype_used="bf16"), environment=env)
    table.save(tmp_path / "h100-sxm-80gb.json")
    said = [w for w in shardplan.check(recipe).warnings if w.rule == "measured_kernel_table"]
    assert said and "h100-sxm-80gb.json" in said[0].message and "cuda:NVIDIA H100" in said[0].message
