"""Every flag the flag table says shardplan reads is read by code, so the gap between the table and the readers
cannot reopen: a flag in MODELLED or RULE_FLAGS that no module reads would be reported as understood while it
changes nothing (the README promises such flags are listed as not understood, never silently ignored)."""

import pytest

from constraints.megatron import flags as mf
from tests.helpers.builders import REPO

ROOT = REPO
TABLES = {"constraints/megatron/flag_table.py", "constraints/megatron/flags.py"}


def _reader_sources() -> str:
    """The text of every module that can read a parsed flag: constraints/ (rules, refusals, spec builders)."""
    files = [p for p in (ROOT / "constraints").rglob("*.py") if p.relative_to(ROOT).as_posix() not in TABLES]
    return "\n".join(p.read_text() for p in files)


SOURCES = _reader_sources()


@pytest.mark.parametrize("flag", sorted(mf.RULE_FLAGS | mf.MODELLED | mf.PROJECTION_FLAGS))
def test_flag_marked_read_is_read_by_a_module(flag):
    assert f'"{flag}"' in SOURCES, f"{flag} is marked read by a rule or a spec field, but no module reads it"


def test_a_flag_read_by_nothing_is_reported_not_understood():
    # --moe-router-num-groups was once marked "read by a rule" with no rule reading it (ModelSpec.moe_router_num_groups
    # reads it now); --moe-router-force-biased skews the benchmark routing, which nothing models: listed as not understood
    from constraints.megatron.tokenize import tokenize_args

    raw, ignored, unknown = tokenize_args(["--moe-router-force-biased", "0.1", "--use-tp-pp-dp-mapping"])
    assert unknown == ["--moe-router-force-biased"] and "--use-tp-pp-dp-mapping" in raw
