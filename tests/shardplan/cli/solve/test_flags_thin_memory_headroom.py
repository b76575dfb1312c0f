"""A top recipe at 99.9 % of usable HBM was listed with no word (found by QA: Llama-3.1-8B on 2 x 1 H100, 0.09 GiB
free), though allocator fragmentation and CUDA-graph pools are not modelled and the Megatron-Bridge memory studies
saw runs at 97-99 % of capacity die. The table now flags answers with under 3 % of HBM capacity free."""
from __future__ import annotations

from click.testing import CliRunner

from shardplan.cli.main import cli

ARGS = ["solve", "--model", "Llama-3.1-8B", "--hardware", "h100-sxm-80gb", "--seq-length", "8192", "--top", "3",
        "--proposer", "none"]


def test_a_recipe_near_the_top_of_hbm_is_flagged():
    res = CliRunner().invoke(cli, ARGS + ["--nodes", "2", "--gpus-per-node", "1", "--global-batch-size", "96"])
    assert res.exit_code == 0, res.output
    assert "rank 1: under 3% of HBM left free" in res.stdout and "--max-memory-fraction 0.95" in res.stdout


def test_roomy_recipes_are_not():
    res = CliRunner().invoke(cli, ARGS + ["--nodes", "1", "--gpus-per-node", "8", "--global-batch-size", "64",
                                          "--max-memory-fraction", "0.95"])
    assert res.exit_code == 0, res.output
    assert "of HBM left free" not in res.stdout


def test_the_suggested_fraction_clears_the_flag():
    res = CliRunner().invoke(cli, ARGS + ["--nodes", "2", "--gpus-per-node", "1", "--global-batch-size", "96",
                                          "--max-memory-fraction", "0.95"])
    assert res.exit_code == 0, res.output
    assert "of HBM left free" not in res.stdout


def test_csv_and_markdown_say_it_on_stderr():
    for fmt in ("csv", "markdown"):
        res = CliRunner().invoke(cli, ARGS + ["--nodes", "2", "--gpus-per-node", "1", "--global-batch-size", "96",
                                              "--format", fmt])
        assert res.exit_code == 0 and "rank 1: under 3% of HBM left free" in res.stderr
        assert "HBM left free" not in res.stdout
