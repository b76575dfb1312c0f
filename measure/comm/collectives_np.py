"""measure.comm.collectives' alpha-beta times as affine pieces, evaluated over numpy arrays of byte counts.

Why pieces: for one group (size, stride, placement) every algorithm's time is slope * bytes + intercept,
and the collective takes the fastest; storing the pieces per group lets a batch price its DP traffic with
a few vector min/multiply-adds while giving the scalar module's numbers exactly.
"""
from __future__ import annotations

import math

import numpy as np

from constraints.spec import Placement
from hardware.profile import HardwareProfile
from measure.comm import collectives as col
from measure.comm.topology import group_span


def span_row(size: int, stride: int, profile: HardwareProfile, placement: Placement) -> list[float]:
    """Affine pieces (slope s/byte, intercept s) of measure.comm.collectives' algorithms for one group, so that
    time(n) = min over pieces + fixed overhead, for n > 0: reduce-scatter / all-gather (ring, hierarchical),
    then all-reduce (ring, hierarchical with ring or tree across domains), then the overhead (0 when g = 1)."""
    span = group_span(size, stride, profile, placement)
    g, k, d = span.size, span.per_domain, span.num_domains
    if g <= 1:
        return [0.0] * 11
    bu, au, bo, ao = col._links(profile, span)
    ov = profile.calibration.collective_fixed_overhead_us * 1e-6
    if d == 1:
        one = [(g - 1) / g / bu, (g - 1) * au] * 2
        ar = [2 * (g - 1) / g / bu, 2 * (g - 1) * au] * 3
        return one + ar + [ov]
    one = [(g - 1) / g / bo, (g - 1) * ao, (k - 1) / k / bu + (d - 1) / d / k / bo, (k - 1) * au + (d - 1) * ao]
    intra = [2 * (k - 1) / k / bu, 2 * (k - 1) * au]
    ar = [2 * (g - 1) / g / bo, 2 * (g - 1) * ao,
          intra[0] + 2 * (d - 1) / d / k / bo, intra[1] + 2 * (d - 1) * ao,
          intra[0] + 2 / k / bo, intra[1] + 2 * math.log2(d) * ao]
    return one + ar + [ov]


def one_pass_np(n, s):
    """measure.comm.collectives.reduce_scatter_s / all_gather_s of n bytes; s = span_row columns."""
    t = np.minimum(s[0] * n + s[1], s[2] * n + s[3]) + s[10]
    return np.where(n > 0, t, 0.0)


def all_reduce_np(n, s):
    """measure.comm.collectives.all_reduce_s of n bytes; s = span_row columns."""
    t = np.minimum(np.minimum(s[4] * n + s[5], s[6] * n + s[7]), s[8] * n + s[9]) + s[10]
    return np.where(n > 0, t, 0.0)
