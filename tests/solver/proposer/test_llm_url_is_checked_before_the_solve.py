"""A malformed --llm-base-url (a port out of range or not a number, an unclosed IPv6 bracket) passed the http(s)
prefix check and failed inside urllib at the first request, as "internal error: ValueError" (exit 3); a URL with no
host retried three times (found by QA). Each is now one line naming the option, exit 2, before anything is solved."""
from __future__ import annotations

import pytest
from click.testing import CliRunner

from shardplan.cli.main import cli

ARGS = ["solve", "--model", "Llama-3.1-8B", "--hardware", "h100-sxm-80gb", "--nodes", "1", "--seq-length", "4096",
        "--global-batch-size", "64", "--top", "1", "--proposer", "llm", "--llm-model", "x", "--llm-base-url"]


@pytest.mark.parametrize("url, says", [("http://127.0.0.1:99999/v1", "Port out of range"),
                                       ("http://127.0.0.1:abc/v1", "Port could not be cast"),
                                       ("http://[::1", "Invalid IPv6 URL"), ("http:///v1", "names no host"),
                                       ("http://127.0.0.1:0/v1", "port 0")])
def test_a_malformed_url_is_one_line_and_exit_2(url, says):
    res = CliRunner().invoke(cli, ARGS + [url])
    assert res.exit_code == 2, res.output
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: --llm-base-url") and says in lines[0]
