"""`--software STACK:VERSION`, shared by check, solve, sweep and report (docs/software.md)."""
from __future__ import annotations

import click

software_option = click.option(
    "--software", default=None, metavar="STACK:VERSION",
    help="the stack generation, e.g. megatron-bridge:26.08, nemo:24.07, megatron-core:0.12.0, megatron-lm:2021-04 "
         "[default: the recipe's or log's own, else the newest; see docs/software.md]")
