"""bench/part_pairs.py: two parts' rows of one published configuration are paired, and each is projected with constants
fitted without its publication (issue 32: the projection's part ratio against the measured one)."""
import pytest

from bench.part_pairs import find_pairs, held_out_ratios, report
from bench.run_slices import source_group, throughput_cases
from hardware.profile import load_profile


@pytest.fixture(scope="module")
def cases():
    return throughput_cases()


def _ids(pairs):
    return {(a.id, b.id) for a, b in pairs}


def test_gpt_oss_on_gb300_and_gb200_pairs_at_the_published_ratio(cases):
    """Megatron-Bridge performance summary 26.04.01: GPT-OSS-120B BF16 on 64 GPUs, tp1 pp1 ep64 mbs4 gbs1280, 19200
    tokens/s/GPU on GB300 (MBR-092) and 16640 on GB200 (MBR-093)."""
    pairs = find_pairs(cases, "gb300-nvl72", "gb200-nvl72")
    assert ("MBR-092", "MBR-093") in _ids(pairs)
    a, b = next((a, b) for a, b in pairs if a.id == "MBR-092")
    assert a.measured["tokens_per_s_per_gpu"] / b.measured["tokens_per_s_per_gpu"] == pytest.approx(19200 / 16640)


def test_rows_of_another_layout_pair_only_where_asked(cases):
    # Nemotron-3-Super MXFP8 in 26.04.01: TP 1 on GB300 (MBR-113), TP 2 on GB200 (MBR-115): never one configuration
    assert ("MBR-113", "MBR-115") not in _ids(find_pairs(cases, "gb300-nvl72", "gb200-nvl72", any_ep=True))
    # GPT-OSS-120B in 26.04.01: EP 64 on the GB300 rack (MBR-092), EP 8 on 8-GPU B300 nodes (MBR-094)
    assert ("MBR-092", "MBR-094") not in _ids(find_pairs(cases, "gb300-nvl72", "b300"))
    assert ("MBR-092", "MBR-094") in _ids(find_pairs(cases, "gb300-nvl72", "b300", any_ep=True))


def test_each_row_is_projected_without_its_publication(cases):
    pairs = [p for p in find_pairs(cases, "gb300-nvl72", "gb200-nvl72") if p[0].id in ("MBR-092", "MBR-138")]
    fitted_on = []

    def stub_fit(rows):
        fitted_on.append(rows)
        return load_profile

    out = held_out_ratios(pairs, cases, fit=stub_fit)
    assert len(fitted_on) == 1  # one fit per publication, shared by its pairs
    assert fitted_on[0] and not any(source_group(c) == "MBR" for c in fitted_on[0])
    assert [p.a_id for p in out] == [a.id for a, _ in pairs]
    assert all(p.projected_ratio > 0 for p in out)
    lines = report(out, "gb300-nvl72", "gb200-nvl72")
    assert lines[-1].startswith("2 pairs: median measured ratio")


def test_an_unknown_part_is_one_error_line(capsys):
    from bench.part_pairs import main
    with pytest.raises(SystemExit) as exc:
        main(["gb300-nvl72", "gb400"])
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: part: no runs.csv row on gb400; use one of ")
