"""Shared test builders: bundled models, profiles, small case builders, and the CLI as a user runs it."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from constraints.case import Case
from constraints.models.load import MODELS_DIR, load_model
from constraints.spec import JobSpec, Placement, Recipe

REPO = Path(__file__).resolve().parents[2]
TESTS = REPO / "tests"


LLAMA_8B_HF = json.loads((MODELS_DIR / "Llama-3.1-8B.json").read_text())

# Llama-3.1-8B as Megatron arguments (TP 2), for check-input tests that edit one flag
A5_ARGS = ("--num-layers 32 --hidden-size 4096 --ffn-hidden-size 14336 --num-attention-heads 32 --group-query-attention "
           "--num-query-groups 8 --vocab-size 128256 --swiglu --untie-embeddings-and-output-weights --normalization RMSNorm "
           "--disable-bias-linear --tensor-model-parallel-size 2 --micro-batch-size 1 "
           "--global-batch-size 16 --seq-length 4096 --bf16\n")

# a legal Llama-3.1-8B recipe on one H100 node whose MBS 3 does not divide its micro-batch count
LLAMA8B_MBS3 = """model: Llama-3.1-8B
hardware: h100-sxm-80gb
nodes: 1
gpus_per_node: 8
job: {seq_length: 4096, global_batch_size: 32, precision: bf16}
recipe: {tp: 2, pp: 1, mbs: 3, sequence_parallel: true}
"""


def run_cli(*args, env=None, cwd=None):
    """The real entry point (shardplan.cli.main:main) in a subprocess, so the `error:` prefix and exit status are what a
    user sees; returns (returncode, stdout, stderr)."""
    full_env = None if env is None else {**os.environ, **env}
    p = subprocess.run([sys.executable, "-m", "shardplan.cli.main", *args], capture_output=True, text=True,
                       cwd=cwd or REPO, env=full_env)
    return p.returncode, p.stdout, p.stderr


def hf_config(tmp_path, name="cfg.json", drop=(), **changes):
    """Llama-3.1-8B's HF config.json with keys dropped or changed, written under tmp_path; returns its path."""
    data = {k: v for k, v in LLAMA_8B_HF.items() if k not in drop}
    data.update(changes)
    path = tmp_path / name
    path.write_text(json.dumps(data))
    return str(path)


def make_case(model="Llama-3.1-8B", nodes=1, gpus_per_node=8, hardware="h100-sxm-80gb", seq=4096, gbs=64, **recipe) -> Case:
    m = load_model(model) if isinstance(model, str) else model
    return Case(model=m, job=JobSpec(seq_length=seq, global_batch_size=gbs, precision=recipe.pop("precision", "bf16")),
                recipe=Recipe(**recipe), placement=Placement(hardware=hardware, num_nodes=nodes, gpus_per_node=gpus_per_node))
