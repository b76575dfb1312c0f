"""Alpha-beta time of NCCL-style collectives over a group placed by `measure.comm.topology`.

Model (Hockney alpha-beta; algorithm costs as in Thakur et al. 2005 and NCCL's ring/tree tuning):
a link domain has per-GPU one-direction bandwidth B (x the profile's collective efficiency) and a
per-step latency a. For a group with k members in each of d scale-up domains (g = k*d):
- ring all-reduce: 2(g-1) steps, each GPU moves 2(g-1)/g * n over its slowest link;
- hierarchical all-reduce: intra reduce-scatter (k), inter all-reduce of n/k over the d domains (ring or
  tree), intra all-gather;
- tree all-reduce across domains: ~2 n / B_out with 2 log2(d) latency steps (NCCL double binary tree);
- reduce-scatter / all-gather: one pass (half the all-reduce), ring or hierarchical;
- all-to-all (direct): every rank sends n/g to each peer, intra-domain and inter-domain parts concurrent;
- p2p: one message over the link between two stages, at the p2p efficiency.
Every collective adds the profile's fixed overhead; the fastest applicable algorithm is taken.
"""
from __future__ import annotations

import math

from hardware.profile import HardwareProfile
from measure.comm.topology import GroupSpan


def _links(profile: HardwareProfile, span: GroupSpan) -> tuple[float, float, float, float]:
    """(intra B bytes/s, intra latency s, inter B bytes/s, inter latency s) for this group."""
    eff = profile.calibration.collective_bandwidth_efficiency
    b_up = profile.scale_up_bandwidth_gb_per_s * 1e9 * eff
    a_up = profile.scale_up_latency_us * 1e-6
    if span.crosses_pod and profile.inter_pod_bandwidth_gb_per_s:
        b_out = min(profile.inter_pod_bandwidth_gb_per_s, profile.scale_out_bandwidth_gb_per_s) * 1e9 * eff
        a_out = (profile.inter_pod_latency_us or profile.scale_out_latency_us) * 1e-6
    else:
        b_out = profile.scale_out_bandwidth_gb_per_s * 1e9 * eff
        a_out = profile.scale_out_latency_us * 1e-6
    return b_up, a_up, b_out, a_out


def _overhead(profile: HardwareProfile) -> float:
    return profile.calibration.collective_fixed_overhead_us * 1e-6


def _one_pass(n: float, span: GroupSpan, profile: HardwareProfile) -> float:
    """Reduce-scatter or all-gather of an n-byte buffer (per rank, full size), best of ring / hierarchical."""
    g, k, d = span.size, span.per_domain, span.num_domains
    b_up, a_up, b_out, a_out = _links(profile, span)
    if d == 1:
        return (g - 1) / g * n / b_up + (g - 1) * a_up
    ring = (g - 1) / g * n / b_out + (g - 1) * a_out
    hier = (k - 1) / k * n / b_up + (k - 1) * a_up + (d - 1) / d * (n / k) / b_out + (d - 1) * a_out
    return min(ring, hier)


def all_reduce_s(n_bytes: float, span: GroupSpan, profile: HardwareProfile) -> float:
    if span.size <= 1 or n_bytes <= 0:
        return 0.0
    g, k, d = span.size, span.per_domain, span.num_domains
    b_up, a_up, b_out, a_out = _links(profile, span)
    if d == 1:
        return 2 * (g - 1) / g * n_bytes / b_up + 2 * (g - 1) * a_up + _overhead(profile)
    ring = 2 * (g - 1) / g * n_bytes / b_out + 2 * (g - 1) * a_out
    intra = 2 * ((k - 1) / k * n_bytes / b_up + (k - 1) * a_up)
    inter_ring = 2 * (d - 1) / d * (n_bytes / k) / b_out + 2 * (d - 1) * a_out
    inter_tree = 2 * (n_bytes / k) / b_out + 2 * math.log2(d) * a_out
    return min(ring, intra + min(inter_ring, inter_tree)) + _overhead(profile)


def reduce_scatter_s(n_bytes: float, span: GroupSpan, profile: HardwareProfile) -> float:
    if span.size <= 1 or n_bytes <= 0:
        return 0.0
    return _one_pass(n_bytes, span, profile) + _overhead(profile)


all_gather_s = reduce_scatter_s  # same traffic pattern in reverse (n = the gathered, full-size buffer)


def all_to_all_s(n_bytes: float, span: GroupSpan, profile: HardwareProfile) -> float:
    """Direct all-to-all: each rank holds n bytes and sends n/g to each of the g-1 others."""
    if span.size <= 1 or n_bytes <= 0:
        return 0.0
    g, k = span.size, span.per_domain
    b_up, a_up, b_out, a_out = _links(profile, span)
    intra = n_bytes * (k - 1) / g / b_up + a_up
    inter = n_bytes * (g - k) / g / b_out + a_out if g > k else 0.0
    return max(intra, inter) + _overhead(profile)


def p2p_s(n_bytes: float, crosses_domain: bool, profile: HardwareProfile) -> float:
    """One send/recv between adjacent pipeline stages."""
    if n_bytes <= 0:
        return 0.0
    eff = profile.calibration.p2p_bandwidth_efficiency
    if crosses_domain:
        return n_bytes / (profile.scale_out_bandwidth_gb_per_s * 1e9 * eff) + profile.scale_out_latency_us * 1e-6
    return n_bytes / (profile.scale_up_bandwidth_gb_per_s * 1e9 * eff) + profile.scale_up_latency_us * 1e-6


def node_dedup_all_to_all_s(token_bytes: float, topk: int, span: GroupSpan, profile: HardwareProfile,
                            domain_hit: float | None = None) -> float:
    """MoE dispatch (or combine) through a node-aware dispatcher (Megatron `--moe-token-dispatcher-type flex`:
    DeepEP / HybridEP): each token crosses the network once per destination scale-up domain, then NVLink
    forwards it to the experts there (DeepEP README, "internode" kernels: RDMA to the peer node, NVLink inside).
    token_bytes: this rank's tokens, one copy each. With forced-balanced routing over d domains a token hits a
    given other domain with probability 1 - (1 - 1/d)^topk (topk experts drawn uniformly). Inside one domain it
    is the plain all-to-all of topk copies. `domain_hit`: that probability where the router limits the domains a token
    may reach (measure/projection/moe_routing.py domain_hit_probability); None = the uniform draw above."""
    if span.size <= 1 or token_bytes <= 0:
        return 0.0
    if span.num_domains == 1:
        return all_to_all_s(token_bytes * topk, span, profile)
    k, d = span.per_domain, span.num_domains
    b_up, a_up, b_out, a_out = _links(profile, span)
    remote_domains = (d - 1) * (1.0 - (1.0 - 1.0 / d) ** topk if domain_hit is None else domain_hit)
    inter = token_bytes * remote_domains / b_out + a_out
    intra = token_bytes * topk * (k - 1) / k / b_up + a_up  # every copy crosses NVLink once (sent or forwarded)
    return max(intra, inter) + _overhead(profile)
