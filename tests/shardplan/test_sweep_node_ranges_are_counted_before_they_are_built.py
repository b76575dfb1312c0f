"""`sweep --nodes` counts a range's sizes by arithmetic and refuses past 256 before building any list (issue 33:
`1..100000001+1` built 10^8 sizes, 9.6 s and ~4 GB, before the cap said no); the ranges it accepts are unchanged."""
import pytest

from shardplan.sweep import parse_nodes
from tests.helpers.bounded_run import assert_one_line_refusal, run_cli_bounded


@pytest.mark.parametrize("nodes,count", [("1..100000001+1", "100,000,001 sizes"), ("1..10000000000000000000000+7",
                                                                                   "1,428,571,428,571,428,571,429 sizes"),
                                         ("1.." + "9" * 4000, "13,289 sizes"), (",".join(["8"] * 300), "300 items")])
def test_a_range_past_the_cap_is_refused_before_it_is_built(nodes, count):
    run = run_cli_bounded("sweep", "--model", "Llama-3.1-8B", "--hardware", "h100-sxm-80gb", "--nodes", nodes,
                          "--seq-length", "4096", "--global-batch-size", "64")
    assert_one_line_refusal(run, "--nodes: ", count, "at most 256 sizes")


def test_doubling_ranges_end_at_hi_as_before():
    # the sizes the old loop built (n, 2n, 4n, ... below hi, then hi), for every lo <= hi up to 300
    for lo in range(1, 301):
        for hi in range(lo, 301):
            want, n = [], lo
            while n < hi:
                want.append(n)
                n *= 2
            assert parse_nodes(f"{lo}..{hi}") == want + [hi], (lo, hi)


def test_the_cap_itself_is_accepted():
    assert len(parse_nodes("1..256+1")) == 256 and parse_nodes("1..256+1")[-1] == 256
    with pytest.raises(ValueError, match="257 sizes"):
        parse_nodes("1..257+1")
    assert parse_nodes(",".join(["2"] * 256)) == [2]
