"""`--attention-backend local / unfused` and the softmax flags from a launch script: read into the Recipe, judged by
the rules the two backends' sources assert (CP = 1; local: TP divides the query groups), refused where Megatron's
pretrain scripts cannot start them (local), written back by render so check -> render -> check round-trips."""
from __future__ import annotations

import re

import pytest
from click.testing import CliRunner

from constraints.megatron.argv_to_specs import MegatronArgsError, parse_megatron_args
from constraints.read import load_check_input
from constraints.spec import AttentionBackend
from shardplan.cli.render import render_command

MODEL = ("--num-layers 8 --hidden-size 1024 --num-attention-heads 16 --group-query-attention --num-query-groups 4 "
         "--seq-length 2048 --max-position-embeddings 2048 --micro-batch-size 1 --global-batch-size 32 --bf16 "
         "--vocab-size 32000 --attention-dropout 0.0 --hidden-dropout 0.0")


def _script(tmp_path, extra: str, entry: str = "pretrain_gpt.py") -> str:
    p = tmp_path / "train.sh"
    p.write_text(f"#!/bin/bash\nexport CUDA_DEVICE_MAX_CONNECTIONS=1\ntorchrun --nproc_per_node 8 {entry} {MODEL} {extra}\n")
    return str(p)


def _check(path: str):
    from shardplan.api import check

    return check(path, hardware="h100-sxm-80gb", project=False)


def test_flags_are_read_into_the_recipe_and_understood():
    cfg = parse_megatron_args((MODEL + " --attention-backend unfused --no-masked-softmax-fusion "
                                       "--attention-softmax-in-fp32").split())
    r = cfg.recipe
    assert (r.attention_backend, r.masked_softmax_fusion, r.attention_softmax_in_fp32) == (
        AttentionBackend.unfused, False, True)
    assert not {"--attention-backend", "--no-masked-softmax-fusion", "--attention-softmax-in-fp32"} & set(
        cfg.unknown_flags + cfg.ignored_flags)
    # validate_args: --apply-query-key-layer-scaling also turns on attention_softmax_in_fp32
    assert parse_megatron_args((MODEL + " --apply-query-key-layer-scaling").split()).recipe.attention_softmax_in_fp32
    default = parse_megatron_args(MODEL.split()).recipe
    assert (default.attention_backend, default.masked_softmax_fusion, default.attention_softmax_in_fp32) == (
        AttentionBackend.auto, True, False)
    with pytest.raises(MegatronArgsError, match="--attention-backend"):
        parse_megatron_args((MODEL + " --attention-backend sdpa").split())


def test_context_parallel_is_illegal_with_either_unfused_backend_and_legal_without(tmp_path):
    for backend in ("unfused", "local"):
        res = _check(_script(tmp_path, f"--attention-backend {backend} --context-parallel-size 2"))
        assert "unfused_attention_without_cp" in [v.rule for v in res.violations]
    res = _check(_script(tmp_path, "--attention-backend unfused --context-parallel-size 1"))
    assert "unfused_attention_without_cp" not in [v.rule for v in res.violations] and res.legal
    assert "unfused_attention_projection" in [w.rule for w in res.warnings]  # the projection does not price it


def test_local_needs_tp_to_divide_the_query_groups(tmp_path):
    # 4 query groups: TP 8 replicates them in Megatron's attention module, but DotProductAttention's divide asserts
    bad = _check(_script(tmp_path, "--attention-backend local --tensor-model-parallel-size 8 --sequence-parallel"))
    found = [v for v in bad.violations if v.rule == "local_attention_query_groups"]
    # the fix `check` shows is the nearest legal recipe that fits (shardplan/nearest_fix.py): a TP that divides the 4 groups
    tp = re.match(r"use --tensor-model-parallel-size (\d+)[ ,]", found[0].fix) if found else None
    assert tp and 4 % int(tp.group(1)) == 0, found
    ok = _check(_script(tmp_path, "--attention-backend local --tensor-model-parallel-size 4 --sequence-parallel"))
    assert "local_attention_query_groups" not in [v.rule for v in ok.violations]
    unfused = _check(_script(tmp_path, "--attention-backend unfused --tensor-model-parallel-size 8 --sequence-parallel"))
    assert "local_attention_query_groups" not in [v.rule for v in unfused.violations]


def test_local_from_a_pretrain_script_is_megatrons_exit(tmp_path):
    loaded = load_check_input(_script(tmp_path, "--attention-backend local"), "h100-sxm-80gb", None, None)
    said = [v.message for v in loaded.preflight_violations if v.rule == "megatron_exits"]
    assert said == ["--attention-backend local is only supported with --spec local (Megatron's validate_args asserts)"]
    loaded = load_check_input(_script(tmp_path, "--attention-backend local --spec local"), "h100-sxm-80gb", None, None)
    said = [v.message for v in loaded.preflight_violations if v.rule == "megatron_exits"]
    assert len(said) == 1 and "ValueError" in said[0]
    # an argument file names no pretrain script: its launcher may build the model itself
    args = tmp_path / "args.txt"
    args.write_text(MODEL + " --attention-backend local\n")
    loaded = load_check_input(str(args), "h100-sxm-80gb", 1, 8)
    assert not [v for v in loaded.preflight_violations if v.rule == "megatron_exits"]
    assert loaded.case.recipe.attention_backend == AttentionBackend.local


def test_check_render_check_round_trips_the_backend_and_its_memory(tmp_path):
    path = _script(tmp_path, "--attention-backend unfused --no-masked-softmax-fusion --attention-softmax-in-fp32")
    before = _check(path)
    out = tmp_path / "rendered.sh"
    res = CliRunner().invoke(render_command, [path, "--hardware", "h100-sxm-80gb", "-o", str(out)])
    assert res.exit_code == 0, res.output
    text = out.read_text()
    assert "--attention-backend unfused" in text and "--no-masked-softmax-fusion" in text
    assert "--attention-softmax-in-fp32" in text
    after = _check(str(out))
    assert after.recipe == before.recipe and after.memory.peak_bytes == before.memory.peak_bytes
    assert after.legal == before.legal
