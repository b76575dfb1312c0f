"""A launch script is read within budgets on what its values cost, not only on its statements (issue 33): a short
script that doubles a string, sources a large file over and over, or loops without end is refused in one line that
names the script line, exit 2, in seconds (constraints/script/budget.py)."""
from __future__ import annotations

import time

import pytest

from constraints.script.budget import MAX_EXPANDED_BYTES, MAX_LOOP_PASSES, MAX_SOURCED_BYTES, MAX_VARIABLE_BYTES
from tests.helpers.builders import run_cli

LAUNCH = ("torchrun --nproc_per_node 8 pretrain_gpt.py --num-layers 2 --hidden-size 256 --num-attention-heads 4 "
          "--seq-length 512 --max-position-embeddings 512 --vocab-size 1024 --micro-batch-size 1 "
          "--global-batch-size 8 --bf16 --save \"$X\"\n")
DOUBLING = "X=" + "0123456789" * 10 + "\nfor i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15; do X=\"$X$X\"; done\n"


def _check(tmp_path, text: str, name: str = "train.sh"):
    script = tmp_path / name
    script.write_text(text)
    start = time.monotonic()
    code, out, err = run_cli("check", str(script), "--hardware", "h100-sxm-80gb", cwd=str(tmp_path))
    return code, out, err, time.monotonic() - start


@pytest.mark.parametrize("text, line, says", [
    (DOUBLING + LAUNCH, 2, f"hold more than {MAX_VARIABLE_BYTES >> 20} MiB"),  # 100 bytes doubled: 1.6 MB on pass 14
    ("for i in {1..4000}; do source conf.sh; done\n" + LAUNCH, 1, f"more than {MAX_SOURCED_BYTES >> 20} MiB of script text"),
    ("i=0\nwhile [ $i -ge 0 ]; do i=$((i+1)); done\n" + LAUNCH, 2, f"more than {MAX_LOOP_PASSES:,} passes"),
    ("X=" + "x" * 200_000 + "\nfor i in {1..100}; do Y=$X; done\n" + LAUNCH, 2,
     f"build more than {MAX_EXPANDED_BYTES >> 20} MiB"),
    ("A=(shard_{1..100000})\n" + LAUNCH, 1, "makes more than 10,000 words"),
])
def test_a_spent_budget_is_one_line_naming_the_line(tmp_path, text, line, says):
    (tmp_path / "conf.sh").write_text("# a config of comments\n" + "#" * 1_000_000 + "\n")  # 1 MB, under the file limit
    code, out, err, took_s = _check(tmp_path, text)
    assert code == 2, err
    assert err.count("\n") == 1 and err.startswith(f"error: line {line}: ") and says in err, err
    assert took_s < 30  # before the budgets these ran for hours (the doubling: > 100 s to 1.6 MB)


def test_a_budget_spent_in_a_sourced_file_names_that_file(tmp_path):
    (tmp_path / "grow.sh").write_text("# grows X\n" + DOUBLING)
    code, _, err, _ = _check(tmp_path, "source grow.sh\n" + LAUNCH)
    assert code == 2 and err.startswith("error: grow.sh:line 3: "), err


def test_a_real_sized_loop_stays_within_the_budgets(tmp_path):
    """A data blend of 300 paths built in a loop, each pass expanding the string so far (the costliest real pattern):
    ~4.7 MB expanded in all, read as bash reads it."""
    text = ('DATA=""\nfor i in {1..300}; do DATA="$DATA 0.01 /lustre/fsw/datasets/pile/shard_${i}_text_document"; done\n'
            + LAUNCH.replace('"$X"', "/ckpt --data-path $DATA"))
    code, out, err, _ = _check(tmp_path, text)
    assert code in (0, 1), err
