"""The regression corpus of issue 17 (tests/data/hostile/cases.yaml): each nasty input gets its exit status,
a message naming the problem, and an answer within its time limit; oversized inputs are made here (not
stored in git)."""
from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml

from tests.helpers.fuzz.choice import Case
from tests.helpers.fuzz.run import judge, run_case

CORPUS = Path(__file__).resolve().parent / "data" / "hostile"
CASES = yaml.safe_load((CORPUS / "cases.yaml").read_text())


@pytest.mark.parametrize("entry", [pytest.param(entry, id=entry["name"]) for entry in CASES])
def test_corpus_case(entry, tmp_path):
    argv = [a.replace("{corpus}", str(CORPUS)).replace("{tmp}", str(tmp_path)) for a in entry["argv"]]
    case = Case("corpus", argv, json_shape="check" if "--json" in argv and argv[0] == "check" else "")
    outcome = run_case(case, tmp_path, entry.get("max_s", 20))
    assert not outcome.hung, f"no answer within {entry.get('max_s', 20)} s"
    exits = entry["exit"] if isinstance(entry["exit"], list) else [entry["exit"]]
    assert outcome.rc in exits, (outcome.rc, outcome.err[:300])
    assert entry["says"] in outcome.out + outcome.err, (outcome.out[:300], outcome.err[:300])
    assert not judge(case, outcome, tmp_path)


def test_ten_megabyte_recipe_is_refused_quickly(tmp_path):
    big = tmp_path / "big.yaml"
    big.write_text((CORPUS / "offload_legal.yaml").read_text() + "# " + "x" * (10 << 20) + "\n")
    outcome = run_case(Case("corpus", ["check", str(big)]), tmp_path, 5)
    assert outcome.rc == 2 and "over the 1 MiB limit for a recipe" in outcome.err


def test_fifo_given_as_a_recipe_is_refused_without_blocking(tmp_path):
    fifo = tmp_path / "r.yaml"
    os.mkfifo(fifo)
    outcome = run_case(Case("corpus", ["check", str(fifo)]), tmp_path, 5)
    assert outcome.rc == 2 and "FIFO" in outcome.err


def test_dev_zero_given_as_a_model_is_refused(tmp_path):
    outcome = run_case(Case("corpus", ["check", str(CORPUS / "offload_legal.yaml"), "--model", "/dev/zero"]), tmp_path, 5)
    assert outcome.rc == 2 and "character device" in outcome.err
