"""A value Megatron-LM's argparse refuses by type (`--hierarchical-context-parallel-sizes '2 2'`: `invalid int value`)
is Megatron's own exit, judged as an illegal recipe (exit 1) without that flag, as `invalid choice` is
(docs/reading-scripts-and-configs.md, "Judged illegal with Megatron's own message"); a refused flag the verdict cannot
do without is unusable input (exit 2), one line with argparse's message and the flag (issue 31)."""
from __future__ import annotations

import json

from tests.helpers.builders import run_cli

FLAGS = ("--num-layers 8 --hidden-size 1024 --num-attention-heads 16 --seq-length 2048 --max-position-embeddings 2048 "
         "--vocab-size 32000 --micro-batch-size 1 --global-batch-size 32 --bf16")


def _check(tmp_path, extra: str, *more):
    flags = tmp_path / "a.args"
    flags.write_text(f"{FLAGS} {extra}\n")
    return run_cli("check", str(flags), "--hardware", "h100-sxm-80gb", "--nodes", "1", "--gpus-per-node", "8",
                   "--no-projection", "--env", "CUDA_DEVICE_MAX_CONNECTIONS=1", *more)


def test_an_int_flag_given_two_numbers_in_one_word_is_megatrons_exit(tmp_path):
    code, out, err = _check(tmp_path, "--context-parallel-size 4 --cp-comm-type a2a+p2p "
                                      "--hierarchical-context-parallel-sizes '2 2'", "--json")
    assert code == 1, err
    data = json.loads(out)
    assert [v["message"] for v in data["violations"]] == [
        "Megatron's argparse exits: argument --hierarchical-context-parallel-sizes: invalid int value: '2 2'",
        "--cp-comm-type a2a+p2p requires --hierarchical-context-parallel-sizes"]  # judged without the refused flag
    assert data["violations"][0]["fix"].startswith("pass --hierarchical-context-parallel-sizes as an integer")
    assert data["recipe"]["cp"] == 4  # the rest is judged


def test_a_refused_flag_the_verdict_needs_is_one_line_exit_2(tmp_path):
    code, _, err = _check(tmp_path, "--num-layers x")
    assert code == 2 and err.count("\n") == 1, err
    assert err.startswith("error: Megatron's argparse exits: argument --num-layers: invalid int value: 'x'"), err
