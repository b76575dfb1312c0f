"""Ranges that the command line's options and the Python API's arguments share: one constant each, imported by both
(shardplan/cli/*.py for click's IntRange / FloatRange, shardplan/api_arguments/models.py for the API), so the two can
never drift. tests/shardplan/test_api_arguments_match_the_cli.py holds every click range against the API's model.

Bounds that belong to the data model (sequence length, batch, world size, GPUs per node) are not here: they are read
from constraints/spec.py's JobSpec and Placement fields themselves (shardplan/api_arguments/types.py).
"""
from __future__ import annotations

# --max-memory-fraction: below 10 % of HBM no recipe of a real model fits; above 100 % is more memory than exists
MIN_MEMORY_FRACTION = 0.1
MAX_MEMORY_FRACTION = 1.0

# --top: each answer is re-checked and projected (a second or more each on a large model); a user reads a handful
MAX_TOP = 1000

# --trials: each trial is a real run on the cluster; a few tell the factors apart (docs/closed-loop.md)
MAX_TRIALS = 32

# --time-limit: CP-SAT's deterministic clock; below 0.1 s it proves nothing even on 8 GPUs
MIN_TIME_LIMIT_S = 0.1

# sweep --nodes: each size is its own solve; 256 sizes already cover 1..256 one by one
MAX_SWEEP_SIZES = 256

# sweep --train-tokens: the largest published pre-training runs use ~4e13 tokens; --usd-per-gpu-hour: a finite price
MAX_TRAIN_TOKENS = 1e18
MAX_USD_PER_GPU_HOUR = 1e4

# calibrate LOG...: each log is one projection per fit step; more runs than this add nothing a median would not
MAX_LOGS = 256

# how many hardware profiles one sweep compares (the bundled ones number ~20; each is solved at every size)
MAX_SWEEP_PROFILES = 64

# a name or path argument: Linux's PATH_MAX (limits.h) is 4096 bytes, so a longer text cannot name a file
MAX_PATH_CHARS = 4096

# a range text such as '2..8' or '8..64+8': a few characters; a longer one is no range
MAX_RANGE_CHARS = 64

# sweep's node text: a comma list of MAX_SWEEP_SIZES counts of up to 7 digits each fits in 2,048 characters
MAX_NODE_TEXT_CHARS = 4096

# solve --dp-sharding: the shardings the solver searches (constraints/spec.py's DataParallelSharding also reads
# torch_fsdp2 from scripts, which the solver does not propose)
SOLVE_DP_SHARDINGS = ("distributed_optimizer", "none", "megatron_fsdp")
