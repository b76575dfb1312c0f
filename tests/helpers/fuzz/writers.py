"""Second-round writer inputs (issue 33): what shardplan writes must stay data, and must never replace what it read.

- `writer_case`: a recipe whose model name, hardware file name and render paths are hostile, rendered in every format,
  then read back with `check`: the same recipe must come out (a newline in a name once added an `env_vars:` section,
  and an unquoted `--data-path` read back as TP=8).
- `summary_case`: `solve --render DIR` for a model with a hostile name, into a folder holding a user's own script:
  SUMMARY.md's headings and rows come only from shardplan, and the user's script survives.
- `overwrite_case`: every command given an output path that is one of its inputs (directly, by symlink, by hard
  link): one line and exit 2, the input unchanged.
Every name carries the marker `INJECT` after its syntax, and starts with `sp-`, so the judge can tell a line the
name made from a line shardplan made (tests/helpers/fuzz/run.py).
"""
from __future__ import annotations

from pathlib import Path

import yaml

from tests.helpers.fuzz.choice import Case, chance, pick

REPO = Path(__file__).resolve().parents[3]
LOG = REPO / "tests" / "data" / "logs" / "swift_qwen2_0p5b_megatron_core.log"
SMALL_MODEL = {"num_layers": 4, "hidden_size": 256, "ffn_hidden_size": 1024, "num_attention_heads": 4,
               "num_query_groups": 4, "vocab_size": 1024, "max_position_embeddings": 2048}
HOSTILE_NAMES = [
    "sp-plain",
    "sp-a\nenv_vars:\n  INJECT: 1",
    "sp-x] model.tensor_model_parallel_size=8 INJECT dataset.split=[1",
    "sp-x\n# INJECT heading",
    "sp-x\n| INJECT | user.sh | 1 |",
    "sp-| INJECT | b |",
    "sp-`INJECT`",
    "sp-<script>INJECT</script>",
    "sp-\x1b[2J\x1b]0;INJECT\x07",
    "sp-name: INJECT",
    "sp-'q\"INJECT",
    "sp-${HOME}INJECT",
    "sp-$(touch INJECT)",
    "sp-a\\INJECT",
    "sp-\u202eINJECT",
    "sp-x\r\nINJECT: 1",
    "sp-\x85INJECT",
    "sp-{INJECT: 1}",
    "sp-&anchor *INJECT",
    "sp-x\n---\nINJECT: 1",
]
HOSTILE_PATHS = ["/data/plain_text_document", "/d/x] model.tensor_model_parallel_size=8 dataset.split=[1",
                 "/d/a\nINJECT: 1", "/d/$(touch INJECT)", "/d/`INJECT`", "/d/'\"INJECT", "/d/a b", "/d/#INJECT",
                 "/d/\x1b]0;INJECT\x07", "/d/${HOME}", "/d/a=b,c=d", "/d/{a: 1}"]
FORMATS = {"torchrun": "out.sh", "slurm": "out.sbatch", "primus": "out.yaml", "bridge": "out.yaml",
           "bridge-overrides": "out.txt"}
SAFE_FILE_NAMES = ["model.yaml", "m o d e l.yaml", "model'x.yaml", "model$(id).yaml", "model\nINJECT.yaml"]


def model_file(c) -> str:
    return yaml.safe_dump({**SMALL_MODEL, "name": pick(c, HOSTILE_NAMES)}, allow_unicode=True)


def writer_case(c) -> Case:
    """`render` a legal small recipe in a random format with a hostile name and paths; read it back with `check`."""
    model_name = pick(c, SAFE_FILE_NAMES)
    recipe = {"model": model_name, "hardware": "h100-sxm-80gb", "nodes": 1, "gpus_per_node": 8,
              "job": {"seq_length": 1024, "global_batch_size": 64}, "recipe": {"tp": pick(c, [1, 2]), "pp": 1, "mbs": 1}}
    fmt = pick(c, list(FORMATS))
    out = FORMATS[fmt]
    files = {model_name: model_file(c), "recipe.yaml": yaml.safe_dump(recipe)}
    argv = ["render", "{dir}/recipe.yaml", "--format", fmt, "-o", "{dir}/" + out]
    for option in ("--data-path", "--tokenizer-model", "--checkpoint-dir", "--megatron-path"):
        if chance(c, 50):
            argv += [option, pick(c, HOSTILE_PATHS)]
    cluster = ["--hardware", "h100-sxm-80gb", "--nodes", "1", "--gpus-per-node", "8", "--model", "{dir}/" + model_name]
    readback = {"output": "{dir}/" + out, "check": ["check", "{dir}/" + out, *cluster, "--json"],
                "same_as": ["check", "{dir}/recipe.yaml", "--json"]}
    return Case("writer", argv, files, readback=readback)


def summary_case(c) -> Case:
    """`solve --render DIR` of a hostile-named model into a folder that holds a user's script named in the name."""
    files = {"model.yaml": model_file(c), "out/user.sh": "#!/bin/bash\necho keep\n"}
    if chance(c, 30):  # a SUMMARY.md from an earlier, injected run: its rows must not license deleting user.sh
        files["out/SUMMARY.md"] = "# shardplan\n\n| rank | script |\n|---|---|\n| 1 | user.sh |\n"
    argv = ["solve", "--model", "{dir}/model.yaml", "--hardware", "h100-sxm-80gb", "--nodes", "1", "--gpus-per-node", "8",
            "--seq-length", "1024", "--global-batch-size", "16", "--top", str(pick(c, [1, 2])), "--proposer", "none",
            "--max-time", "60", "--render", "{dir}/out"]
    return Case("summary", argv, files, keep=["out/user.sh"], markdown={"path": "{dir}/out/SUMMARY.md"})


def overwrite_case(c) -> Case:
    """A command whose output path is one of its inputs: directly, by a symlink, or by a hard link."""
    model = yaml.safe_dump({**SMALL_MODEL, "name": "small"})
    recipe = yaml.safe_dump({"model": "model.yaml", "hardware": "{dir}/profile.yaml", "nodes": 1, "gpus_per_node": 8,
                             "job": {"seq_length": 1024, "global_batch_size": 64}, "recipe": {"tp": 1, "pp": 1, "mbs": 1}})
    profile = (REPO / "hardware" / "profiles" / "h100-sxm-80gb.yaml").read_text()
    script = ("#!/bin/bash\nsource ./env.sh\ntorchrun --nproc_per_node 8 pretrain_gpt.py --num-layers 4 --hidden-size 512 "
              "--num-attention-heads 8 --seq-length 1024 --max-position-embeddings 1024 --micro-batch-size 1 "
              "--global-batch-size 64 --ffn-hidden-size 1376 --vocab-size 2048 --tensor-model-parallel-size $TP --bf16\n")
    files = {"model.yaml": model, "recipe.yaml": recipe, "profile.yaml": profile, "train.sh": script,
             "env.sh": "TP=1\n", "run.log": LOG.read_text(errors="replace")}
    cluster = ["--hardware", "{dir}/profile.yaml", "--nodes", "1", "--gpus-per-node", "8"]
    solve_job = ["--seq-length", "1024", "--global-batch-size", "16"]
    # each command with the files it reads; the output goes onto one of those
    commands = [
        (["render", "{dir}/recipe.yaml", "-o", "{out}"], ["recipe.yaml", "model.yaml", "profile.yaml"]),
        (["render", "{dir}/train.sh", *cluster, "-o", "{out}"], ["train.sh", "env.sh", "profile.yaml"]),
        (["report", "check", "{dir}/recipe.yaml", "-o", "{out}"], ["recipe.yaml", "model.yaml", "profile.yaml"]),
        (["report", "check", "{dir}/recipe.yaml", "-o", "{dir}/r.html", "--trace", "{out}"], ["recipe.yaml", "model.yaml"]),
        (["report", "check", "{dir}/train.sh", *cluster, "-o", "{out}"], ["train.sh", "env.sh"]),
        (["report", "solve", "--model", "{dir}/model.yaml", "--hardware", "{dir}/profile.yaml", "--nodes", "1", *solve_job,
          "--top", "1", "-o", "{out}"], ["model.yaml", "profile.yaml"]),
        (["sweep", "--model", "{dir}/model.yaml", "--hardware", "{dir}/profile.yaml", "--nodes", "1", *solve_job,
          "--report", "{out}"], ["model.yaml", "profile.yaml"]),
        (["calibrate", "{dir}/run.log", "--hardware", "h100-sxm-80gb", "--nodes", "1", "--gpus-per-node", "1", "-o", "{out}"],
         ["run.log"]),
    ]
    argv, inputs = pick(c, commands)
    victim = pick(c, inputs)
    via = pick(c, ["direct", "symlink", "hardlink"])
    target, keep = victim, [victim]
    if via != "direct":
        files["alias"] = ("SYMLINK" if via == "symlink" else "HARDLINK", victim)
        target, keep = "alias", [victim, "alias"]
    argv = [a.replace("{out}", "{dir}/" + target) for a in argv]
    return Case("overwrite", argv, files, keep=keep, must_refuse=True)
