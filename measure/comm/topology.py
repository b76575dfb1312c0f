"""Where a parallel group's ranks sit: inside one scale-up domain, across domains, across pods.

Why rank order matters: Megatron builds every group from one rank grid (`RankGenerator` in
megatron/core/parallel_state.py, default order "tp-cp-ep-dp-pp", first name fastest-varying). A group
of size g whose members are `stride` ranks apart packs D // stride members into a scale-up domain of D
GPUs (when stride < D), so TP (stride 1) stays on NVLink while DP or PP usually cross the network.
Dense grid: tp(1) cp(tp) dp(tp*cp) pp(tp*cp*dp); expert grid: etp(1) ep(etp) edp(etp*ep) pp(world/pp).
"""
from __future__ import annotations

from dataclasses import dataclass

from constraints.spec import Placement, Recipe
from hardware.profile import HardwareProfile


@dataclass(frozen=True)
class GroupSpan:
    """A group of `size` ranks: `per_domain` members share each scale-up domain, over `num_domains`
    domains; `crosses_pod` when the span exceeds the profile's pod."""

    size: int
    per_domain: int
    num_domains: int
    crosses_pod: bool


def domain_size(profile: HardwareProfile, placement: Placement) -> int:
    """Scale-up domain in GPUs: the profile's NVLink/xGMI domain, never more than the job's GPUs, and
    for 8-GPU servers the node itself (placement.gpus_per_node may be 1 for odd counts)."""
    d = min(profile.scale_up_domain_size, placement.world_size)
    if profile.scale_up_domain_size <= profile.gpus_per_node:
        d = min(d, placement.gpus_per_node) if placement.gpus_per_node > 1 else d
    return max(d, 1)


def group_span(size: int, stride: int, profile: HardwareProfile, placement: Placement) -> GroupSpan:
    d = domain_size(profile, placement)
    if size <= 1:
        return GroupSpan(1, 1, 1, False)
    per = max(1, min(size, d // stride)) if stride < d else 1
    domains = -(-size // per)
    span = (size - 1) * stride + 1
    pod = profile.pod_size_gpus
    return GroupSpan(size, per, domains, bool(pod and span > pod and domains > 1))


@dataclass(frozen=True)
class Groups:
    tp: GroupSpan
    cp: GroupSpan
    dp: GroupSpan       # dense grads: DP x CP ranks (Megatron reduces grads over dp-cp)
    ep: GroupSpan
    etp: GroupSpan
    edp: GroupSpan
    pp: GroupSpan


def recipe_groups(recipe: Recipe, profile: HardwareProfile, placement: Placement) -> Groups:
    w = placement.world_size
    tp, cp, pp, ep, etp = recipe.tp, recipe.cp, recipe.pp, recipe.ep, recipe.etp_effective
    dp = recipe.dp(w)
    edp = max(recipe.expert_dp(w), 1)

    def g(size: int, stride: int) -> GroupSpan:
        return group_span(size, stride, profile, placement)

    return Groups(tp=g(tp, 1), cp=g(cp, tp), dp=g(dp * cp, tp), ep=g(ep, etp), etp=g(etp, 1), edp=g(edp, etp * ep),
                  pp=g(pp, max(w // pp, 1)))
