"""What a calibration carries to a model it did not measure: which factors, and how much of each.

Why not all of it: a run's residual after the shipped constants is part cluster (clocks, NCCL, network, the container:
shared by every model on it) and part model (its GEMM shapes, attention kernels, dispatcher: shared by no other).
Calibrating on one model's run fits both, and carrying both to another model swaps that model's own residual for the
first one's: on bench/data/runs.csv, factors fitted on one run and carried whole to another model of the same group
(same publication and release, part, precision) made the error worse than the shipped constants (bench.calibration_cv,
"factors carried over"). Under a random-effects view, log factor = cluster + model part, the best carried share of a
fitted log factor is the cluster share of its variance, w = s_cluster^2 / (s_cluster^2 + s_model^2), in [0, 1]; w = 0
keeps the shipped constants. A factor stands for terms every model has (`communication`: NCCL and the network, `host`:
CPU and framework) or for terms whose speed depends on the model's own shapes (`compute`: GEMM and attention
efficiencies), so the rules below are shares of all factors and the communication + host ones alone.

The carried share is chosen, not fitted per row: bench.calibration_cv measures each rule on every group's other-model
projections and picks, for each publication, the rule that did best on all OTHER publications (leave one publication
out), so the figure it reports for a rule never saw that publication; CARRIED_RULE is the rule that choice picks on
the whole set.
"""
from __future__ import annotations

from measure.calibration.factors import ClusterFactors

# name -> (share of log compute, share of log communication, share of log host) carried to another model
CARRY_RULES: dict[str, tuple[float, float, float]] = {
    "none": (0.0, 0.0, 0.0),
    "all x0.25": (0.25, 0.25, 0.25),
    "all x0.5": (0.5, 0.5, 0.5),
    "all x0.75": (0.75, 0.75, 0.75),
    "communication + host": (0.0, 1.0, 1.0),
    "communication + host x0.5": (0.0, 0.5, 0.5),
}
# bench.calibration_cv picks it (module docstring). Session 37, 742 other-model projections: carried by the rule each
# publication's others chose, median 7.3 % / p90 24.2 % against 7.4 / 24.0 uncalibrated (whole: 9.3 / 30.4). Session 38,
# 1002 projections (577 rows): this rule 7.4 / 19.3 against 7.6 / 18.6 uncalibrated, and the leave-one-publication-out
# choice moved to 'all x0.25' (7.0 / 19.9: a better median, a worse p90, and compute would carry); not switched yet,
# said in the closing note of issue 32. Compute, whose efficiency follows the model's own GEMM shapes, stays at the
# shipped constants, and half of the communication and host factors' log carries
CARRIED_RULE = "communication + host x0.5"


def carried_factors(factors: ClusterFactors, rule: tuple[float, float, float]) -> ClusterFactors:
    """`factors` shrunk toward the shipped constants (1.0) in log space by `rule`'s shares; the allocator gap, measured
    on this cluster's allocator, carries whole."""
    c, k, h = rule
    return ClusterFactors(compute=factors.compute ** c, communication=factors.communication ** k, host=factors.host ** h,
                          allocator_gap_bytes=factors.allocator_gap_bytes)
