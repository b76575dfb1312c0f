"""A Megatron script with neither --bf16 nor --fp16 trains in fp32 (megatron/training/arguments.py: params_dtype stays
torch.float): `check` judges it as fp32 instead of refusing it, and `render` writes it back without a precision flag,
so check -> render -> check keeps the same verdict and bytes."""
from __future__ import annotations

from click.testing import CliRunner

from constraints.megatron.argv_to_specs import parse_megatron_args
from constraints.spec import Precision
from shardplan.api import check
from shardplan.cli.render import render_command
from tests.helpers.builders import run_cli

MODEL = ("--num-layers 8 --hidden-size 1024 --num-attention-heads 16 --group-query-attention --num-query-groups 4 "
         "--seq-length 2048 --max-position-embeddings 2048 --micro-batch-size 1 --global-batch-size 32 "
         "--vocab-size 32000 --attention-dropout 0.0 --hidden-dropout 0.0 --use-distributed-optimizer")


def _script(tmp_path, extra: str = "") -> str:
    p = tmp_path / "train.sh"
    p.write_text(f"#!/bin/bash\nexport CUDA_DEVICE_MAX_CONNECTIONS=1\ntorchrun --nproc_per_node 8 pretrain_gpt.py {MODEL} {extra}\n")
    return str(p)


def test_no_precision_flag_reads_as_fp32_and_the_flags_still_win():
    assert parse_megatron_args(MODEL.split()).job.precision == Precision.fp32
    assert parse_megatron_args((MODEL + " --bf16").split()).job.precision == Precision.bf16
    assert parse_megatron_args((MODEL + " --fp16").split()).job.precision == Precision.fp16


def test_check_judges_an_fp32_script_with_twice_the_weight_bytes(tmp_path):
    rc, out, err = run_cli("check", _script(tmp_path), "--hardware", "h100-sxm-80gb")
    assert rc == 0, err
    assert out.splitlines()[0].endswith(", fp32")  # the job line says what was read
    fp32 = check(_script(tmp_path), hardware="h100-sxm-80gb")
    (tmp_path / "bf16").mkdir()
    bf16 = check(_script(tmp_path / "bf16", "--bf16"), hardware="h100-sxm-80gb")
    assert fp32.case.job.precision == Precision.fp32 and bf16.case.job.precision == Precision.bf16
    assert fp32.memory.terms["weights"] == 2 * bf16.memory.terms["weights"]
    assert fp32.projection.iteration_time_s > bf16.projection.iteration_time_s  # a 0.1B model: mostly host-bound


def test_render_writes_fp32_back_without_a_precision_flag(tmp_path):
    path = _script(tmp_path)
    out = tmp_path / "rendered.sh"
    res = CliRunner().invoke(render_command, [path, "--hardware", "h100-sxm-80gb", "-o", str(out)])
    assert res.exit_code == 0, res.output
    text = out.read_text()
    assert "--bf16" not in text and "--fp16" not in text
    before, after = check(path, hardware="h100-sxm-80gb"), check(str(out), hardware="h100-sxm-80gb")
    assert after.memory.peak_bytes == before.memory.peak_bytes and after.case.job.precision == Precision.fp32
