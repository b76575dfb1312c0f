"""Stated limits on what shardplan reads, each with the reason it is safe.

A real input sits orders of magnitude below each limit (the largest bundled model config is 3 KiB, the
largest recipe 1 KiB, a Megatron-LM example script 8 KiB, a measured cost table ~2 MiB), so a file past one
is a mistake or an attack, and refusing it in one line is better than minutes of parsing or gigabytes of
memory (issue 17: a 10 MB recipe, /dev/zero and a FIFO given as files hung or blew up).
"""
from __future__ import annotations

KIB = 1024
MIB = 1024 * KIB

# Bytes per kind of file (read + parse time stays under ~1 s at these sizes with pure-Python YAML).
MAX_TEXT_BYTES = {
    "recipe": 1 * MIB,
    "model": 1 * MIB,
    "hardware profile": 1 * MIB,
    "launch script": 1 * MIB,
    "cost table": 64 * MIB,
}

# Parsed structure: nesting depth (real files nest <= 6 deep; Python's recursion limit is 1000 frames, which
# a 1 KiB file of `[[[[` reaches), containers and scalars counted with every alias expanded (a recipe has
# < 100; a model YAML with a 4096-entry layer list ~4,200), YAML alias uses (real files use none), the
# length of one string (a pipeline layout for 4096 layers fits in 16 KiB), and entries in one list.
MAX_DEPTH = 32
MAX_ALIASES = 64
# YAML nodes as written (before alias expansion): PyYAML's pure-Python scanner slows quadratically on long flow
# lists (a 1 MiB `[1,1,...]` of 500,000 items took 59 s), so composition stops here; a model YAML with a
# 4096-entry layer list has ~4,200 nodes (10,000 nodes of a flow list parse in ~1 s).
MAX_YAML_NODES = 10_000
MAX_NODES = {"cost table": 5_000_000}
DEFAULT_MAX_NODES = 100_000
MAX_STRING_CHARS = 64 * KIB
MAX_LIST_ITEMS = 65_536

# One input with everything it pulls in (boundary.budget.InputBudget): a Primus experiment, its trainer-defaults
# and model files and every `extends` base, read for one command. Each file passes the limits above on its own; these
# bound the whole. A real Primus tree opens 3-8 files (pre_trainer.yaml extends module_base, primus_megatron_module,
# primus_turbo, zero_bubble; a model file chains 3-4 deep: AMD-AGI/Primus primus/configs/) of ~30 KiB and ~1,000
# values in all; a tree that fans out (3 bases a file, 14 deep) would open 3^14 = 4.8 million.
MAX_TREE_FILES = 64  # files named by `extends` / `config` / `model` entries, a file named twice counted twice
MAX_EXTENDS_DEPTH = 16  # one `extends` chain (Primus model chains are 3-4 files deep)
MAX_TREE_BYTES = 2 * MIB  # all the files together: twice what one recipe file may hold
MAX_TREE_YAML_VALUES = 2 * MAX_YAML_NODES  # YAML values as written in all of them (parse time ~0.1 ms a value)
# `${NAME}` / `${NAME:default}` references (Primus, Megatron --yaml-cfg): one value once substituted is one string
# (MAX_STRING_CHARS); all substitutions of one input add at most what one file may hold (an environment value may be
# 128 KiB, Linux MAX_ARG_STRLEN, and a 1 MiB file can name it 50,000 times).
MAX_EXPANDED_CHARS = 1 * MIB

# How much of a refused value an error message shows (the alias bomb's message once printed 351 MB).
MAX_SHOWN_CHARS = 80


def max_bytes(kind: str) -> int:
    return MAX_TEXT_BYTES.get(kind, 1 * MIB)


def max_nodes(kind: str) -> int:
    return MAX_NODES.get(kind, DEFAULT_MAX_NODES)


def human_bytes(n: int) -> str:
    """`1 MiB` / `64 MiB` / `512 bytes`: how limits read in messages."""
    if n >= MIB and n % MIB == 0:
        return f"{n // MIB} MiB"
    if n >= KIB and n % KIB == 0:
        return f"{n // KIB} KiB"
    return f"{n} bytes"
