"""The long fuzz run: ten thousand or more generated inputs (tests/helpers/fuzz/) through every command,
judged like the CI run (tests/helpers/fuzz/run.py), with the failures counted by class and the peak memory.

    nice python -m bench.fuzz --inputs 10000 --seed 0 [--workers 1] [--out fuzz.json]

Why worker processes: a case runs in-process (an interpreter per case would cost 0.7 s of imports); a worker
that dies (a crash, the kernel's OOM killer) is replaced, and the case it was running is counted as a crash.
Case i is generated from Random(seed * 1_000_003 + i), so any failure is replayed alone with `--replay i`.
Classes: traceback (exit 3 / an exception), hang (no answer within the limit), wrong_exit (an exit outside
0/1/2, a missing or wrong JSON document, exit 2 without one bounded `error:` line), bare_error (an exit-2
line naming neither a field nor a fix), data_loss (a FIFO, folder or file that was not ours changed), crash.
"""
from __future__ import annotations

import argparse
import collections
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
MULTI_GB_KIB = 1 << 20  # a case that raises the worker's peak by more than 1 GiB is a failure of its own (issue 33)
# failures in code another helper owns are counted like the rest and also reported by owner
OWNED_ELSEWHERE = {"substring not found": "scripts (bash lexing)", "RecursionError": "scripts (bash lexing)"}


def case_for(seed: int, index: int):
    from tests.helpers.fuzz.choice import RandomChooser
    from tests.helpers.fuzz.mix import any_case

    return any_case(RandomChooser(random.Random(seed * 1_000_003 + index)))


def worker(seed: int, start: int, stop: int) -> None:
    """Run cases [start, stop) and print one JSON line per case (after a START line, so a death is placed)."""
    from tests.helpers.fuzz.mix import LIMIT_S
    from tests.helpers.fuzz.run import judge, materialise, run_case

    for i in range(start, stop):
        print(json.dumps({"start": i}), flush=True)
        case = case_for(seed, i)
        rss_before_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        with tempfile.TemporaryDirectory(prefix="shardplan-fuzz-") as folder:
            materialise(case, Path(folder))
            outcome = run_case(case, Path(folder), LIMIT_S[case.kind])
            failures = judge(case, outcome, Path(folder))
        rss_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        if rss_kib - rss_before_kib > MULTI_GB_KIB:
            failures = failures + [("multi_gb", f"the worker's peak grew {(rss_kib - rss_before_kib) >> 10} MiB")]
        print(json.dumps({"i": i, "kind": case.kind, "rc": outcome.rc, "s": round(outcome.seconds, 3),
                          "failures": failures, "argv": case.argv[:2], "rss_kib": rss_kib}), flush=True)


def run(inputs: int, seed: int, chunk: int) -> dict:
    stats = {"inputs": 0, "by_kind": collections.Counter(), "exits": collections.Counter(), "failures": collections.Counter(),
             "examples": {}, "owner": collections.Counter(), "peak_rss_mib": 0.0, "slowest_s": 0.0, "slowest": None}
    next_i, t0 = 0, time.monotonic()
    while next_i < inputs:
        stop = min(inputs, next_i + chunk)
        proc = subprocess.Popen([sys.executable, "-m", "bench.fuzz", "--worker", str(seed), str(next_i), str(stop)],
                                cwd=REPO, stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(REPO)})
        running = None
        for line in proc.stdout:
            msg = json.loads(line)
            if "start" in msg:
                running = msg["start"]
                continue
            running = None
            next_i = msg["i"] + 1
            _record(stats, msg)
        proc.wait()
        if running is not None:  # the worker died inside a case
            _record(stats, {"i": running, "kind": "?", "rc": proc.returncode, "s": 0.0, "argv": [],
                            "failures": [("crash", f"worker died with status {proc.returncode}")], "rss_kib": 0})
            next_i = running + 1
        print(f"{next_i}/{inputs} inputs, {sum(stats['failures'].values())} failures, "
              f"{time.monotonic() - t0:.0f} s", file=sys.stderr, flush=True)
    stats["wall_s"] = round(time.monotonic() - t0, 1)
    return stats


def _record(stats: dict, msg: dict) -> None:
    stats["inputs"] += 1
    stats["by_kind"][msg["kind"]] += 1
    stats["exits"][str(msg["rc"])] += 1
    stats["peak_rss_mib"] = max(stats["peak_rss_mib"], msg["rss_kib"] / 1024)
    if msg["s"] > stats["slowest_s"]:
        stats["slowest_s"], stats["slowest"] = msg["s"], {"i": msg["i"], "kind": msg["kind"], "argv": msg["argv"]}
    for cls, detail in msg["failures"]:
        stats["failures"][cls] += 1
        owner = next((o for k, o in OWNED_ELSEWHERE.items() if k in detail), "")
        if owner:
            stats["owner"][owner] += 1
        stats["examples"].setdefault(f"{cls}: {detail[:90]}", msg["i"])


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        worker(*map(int, sys.argv[2:5]))
        return
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--inputs", type=int, default=10_000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--chunk", type=int, default=500, help="cases per worker process")
    ap.add_argument("--out", help="write the figures as JSON here")
    ap.add_argument("--replay", type=int, help="write case I's files to a temp folder and print its argv")
    args = ap.parse_args()
    if args.replay is not None:
        from tests.helpers.fuzz.run import argv_for, materialise

        case = case_for(args.seed, args.replay)
        folder = Path(tempfile.mkdtemp(prefix="shardplan-replay-"))
        materialise(case, folder)
        if case.call:
            print(f"shardplan.{case.call[0]}(**{case.call[1]!r})")
        elif case.processes:
            print("at once:", *(" ".join(argv).replace("{dir}", str(folder)) for argv in case.processes["argvs"]), sep="\n  ")
        else:
            print("shardplan " + " ".join(argv_for(case, folder)))
        return
    stats = run(args.inputs, args.seed, args.chunk)
    print(json.dumps(stats, indent=1, default=dict))
    if args.out:
        Path(args.out).write_text(json.dumps(stats, indent=1, default=dict) + "\n")


if __name__ == "__main__":
    main()
