"""The leave-one-release-out grouping (bench/run_slices.release_group): the Megatron-Bridge performance summary split
by the release each row was published in, every other source kept whole."""
from collections import Counter

from bench.run_slices import release_group, source_group, throughput_cases


def test_performance_summary_rows_split_by_their_release():
    by_id = {c.id: c for c in throughput_cases()}
    # docs/performance-summary-archive.md @067f987d: GPT-OSS-120B B200 BF16 in the 26.04 table, Llama-3.1-405B in 25.11
    assert release_group(by_id["MBR-141"]) == "MBR 26.04"
    assert release_group(by_id["MBR-257"]) == "MBR 25.11"
    assert release_group(by_id["MBCARD-482"]) == "MBCARD"
    assert release_group(by_id["NEMO2407-295"]) == "NEMO2407"


def test_every_summary_row_has_a_release_and_no_other_source_is_split():
    cases = throughput_cases()
    groups = Counter(release_group(c) for c in cases)
    assert "MBR" not in groups
    mbr = [g for g in groups if g.startswith("MBR ")]
    assert len(mbr) >= 8 and sum(groups[g] for g in mbr) == sum(1 for c in cases if source_group(c) == "MBR")
    assert {g for g in groups if not g.startswith("MBR ")} == {source_group(c) for c in cases} - {"MBR"}
