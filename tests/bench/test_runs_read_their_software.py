"""bench/runs.py reads a row's `software` column (STACK:VERSION) and prices the row as that generation runs it;
bench/run_slices.py slices the rows by it."""
import csv

from bench.run_slices import software_generation
from bench.runs import RUNS_CSV, RunCase, RunSkip, load_runs, row_case
from constraints.spec import DataParallelSharding

with open(RUNS_CSV, newline="") as fh:
    COLUMNS = csv.DictReader(fh).fieldnames


def row(**cells) -> dict:
    """A GPT-3 175B row as Megatron-LM's README published it in 2021 (@152aab30: 1024 A100, TP 8, PP 16, GBS 1536, fp16,
    full recompute, ~32 s per iteration)."""
    base = dict(source_id="TEST-001", source="test", model="GPT3-175B", hardware="A100-SXM4-80GB", gpus="1024", gbs="1536",
                mbs="1", tp="8", pp="16", seq_len="2048", precision="FP16", recompute="full", sequence_parallel="false",
                notes="", outcome="ran", tokens_per_s_per_gpu="96")
    return {c: "" for c in COLUMNS} | base | cells


def test_every_row_with_software_states_a_generation_it_can_place():
    cases = load_runs()
    assert sum(c.software is not None for c in cases) > 250
    assert all(software_generation(c) != "unstated" for c in cases if c.software)


def test_a_2021_row_runs_local_modules_and_ddp_without_overlap():
    case = row_case(row(software="megatron-lm:2021-01"))
    assert isinstance(case, RunCase) and case.software == "megatron-lm:2021-01"
    assert case.recipe.local_transformer_impl and not case.recipe.overlap_grad_reduce
    assert case.recipe.dp_sharding == DataParallelSharding.none  # the bench's distributed-optimizer assumption overruled
    assert any("software megatron-lm:2021-01" in a for a in case.assumed)
    assert software_generation(case) == "megatron-lm 2021"


def test_torch_ddp_stated_in_the_notes_keeps_its_overlap():
    case = row_case(row(software="megatron-lm:2021-04", notes="--fp16 --DDP-impl torch (sc21 scripts)"))
    assert case.recipe.overlap_grad_reduce and case.recipe.local_transformer_impl


def test_a_row_stating_what_its_generation_lacks_is_skipped_with_the_reason():
    skip = row_case(row(software="megatron-lm:2021-04", tp="8", sequence_parallel="true"))
    assert isinstance(skip, RunSkip) and "sequence parallelism" in skip.reason


def test_an_empty_cell_keeps_the_newest_generation():
    case = row_case(row())
    assert case.software is None and not case.recipe.local_transformer_impl and software_generation(case) == "unstated"
