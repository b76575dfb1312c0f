"""Legality rules of attention, tensor, sequence and context parallelism (same contract as constraints/rules/registry.py).

Why apart: one concern per module; registered after constraints.rules.pipeline (see constraints/rules/registry.py).
"""
from __future__ import annotations

from typing import Optional

from constraints.rules.base import RuleInput, Violation, divisors, nearest, rule, violation


# ---------------------------------------------------------------- attention / TP / SP / CP
@rule(reads="tp")
def heads_divisible_by_tp(x: RuleInput) -> Optional[Violation]:
    """[14] --num-attention-heads % TP == 0 (TransformerConfig)."""
    a, tp = x.model.num_attention_heads, x.recipe.tp
    if a % tp == 0:
        return None
    return violation("heads_divisible_by_tp", f"{a} attention heads are not divisible by TP={tp}",
              f"use --tensor-model-parallel-size {nearest([d for d in divisors(a) if x.world_size % d == 0], tp)}")


@rule(reads="tp")
def query_groups_vs_tp(x: RuleInput) -> Optional[Violation]:
    """[15] --num-query-groups must be a multiple or a divisor of TP (TransformerConfig)."""
    g, tp = x.model.num_query_groups, x.recipe.tp
    if x.model.multi_latent_attention or g % tp == 0 or tp % g == 0:
        return None
    ok = [d for d in divisors(x.world_size) if g % d == 0 or d % g == 0]
    return violation("query_groups_vs_tp", f"{g} query groups are neither a multiple nor a divisor of TP={tp}",
              f"use --tensor-model-parallel-size {nearest(ok, tp)}")


@rule(reads="sequence_parallel tp")
def sequence_parallel_needs_tp(x: RuleInput) -> Optional[Violation]:
    """[16] --sequence-parallel with TP=1 is silently turned off by validate_args (a warning, not an error)."""
    if x.recipe.sequence_parallel and x.recipe.tp == 1:
        return violation("sequence_parallel_needs_tp", "--sequence-parallel has no effect at TP=1 (Megatron turns it off)",
                  "drop --sequence-parallel", "warning")
    return None


@rule(reads="cp tp sequence_parallel")
def sequence_parallel_divides_seq(x: RuleInput) -> Optional[Violation]:
    """SP scatters the (CP-local) sequence over TP ranks: (seq/CP) % TP == 0 (tensor_parallel mappings assert)."""
    r = x.recipe
    local = x.job.seq_length // r.cp
    if not r.sp_active or local % r.tp == 0:
        return None
    return violation("sequence_parallel_divides_seq", f"sequence {x.job.seq_length}/CP={r.cp} = {local} tokens do not split over TP={r.tp}",
              f"use --seq-length {-(-x.job.seq_length // (r.tp * r.cp)) * r.tp * r.cp}")


@rule(reads="tp_comm_overlap sequence_parallel tp")
def tp_comm_overlap_needs_sp(x: RuleInput) -> Optional[Violation]:
    """[17] --tp-comm-overlap requires --sequence-parallel."""
    if x.recipe.tp_comm_overlap and not x.recipe.sp_active:
        return violation("tp_comm_overlap_needs_sp", "--tp-comm-overlap requires --sequence-parallel (and TP>1)",
                         "add --sequence-parallel or drop --tp-comm-overlap")
    return None


@rule(reads="tp_comm_overlap tp")
def tp_comm_overlap_within_nvlink(x: RuleInput) -> Optional[Violation]:
    """--tp-comm-overlap runs Transformer Engine's userbuffers, which exchange TP shards over NVLink only: CUDA IPC
    within one node (at most 8 GPUs) or a multi-node NVLink fabric (NVL72), never over the network
    (transformer_engine/common/comm_gemm_overlap/userbuffers/userbuffers.h "for TP-parallelism, only single node is
    implemented"; userbuffers-host.cpp "CUDA IPC supports only up to 8 GPUs in an NVLink domain", TransformerEngine
    d0067d0d). A TP group larger than the part's NVLink (scale-up) domain cannot overlap; priced as if it did, TP 16 on
    H100 read within 5 % of the best single-node recipe."""
    r, p = x.recipe, x.profile
    if not r.tp_comm_overlap or p is None or r.tp <= p.scale_up_domain_size:
        return None
    return violation("tp_comm_overlap_within_nvlink", f"--tp-comm-overlap with TP={r.tp} spans more than the "
                     f"{p.scale_up_domain_size}-GPU NVLink domain of {p.name}; Transformer Engine's userbuffers overlap "
                     "TP only over NVLink", f"drop --tp-comm-overlap, or use TP <= {p.scale_up_domain_size}")


@rule(reads="cp")
def context_parallel_seq(x: RuleInput) -> Optional[Violation]:
    """[19] CP>1 needs --seq-length % (2*CP) == 0 (load-balanced causal chunks; validate_args)."""
    cp, s = x.recipe.cp, x.job.seq_length
    if cp == 1 or s % (2 * cp) == 0:
        return None
    return violation("context_parallel_seq", f"--seq-length {s} is not divisible by 2*CP = {2 * cp}",
              f"use --context-parallel-size {nearest([c for c in divisors(s // 2) if x.world_size % c == 0], cp)} or --seq-length {-(-s // (2 * cp)) * 2 * cp}")


@rule(reads="")
def position_embeddings_cover_seq(x: RuleInput) -> Optional[Violation]:
    """[19] --max-position-embeddings >= --seq-length, asserted for every position type (Megatron-LM
    megatron/training/arguments.py:validate_args). A learned table cannot grow; RoPE has no table, so a rendered
    script states max(config, seq) and only an argument list that itself says --max-position-embeddings is held to it."""
    m = x.model
    stated = m.learned_position_embeddings or "--max-position-embeddings" in x.flags
    if not stated or m.max_position_embeddings >= x.job.seq_length:
        return None
    if m.learned_position_embeddings:
        return violation("position_embeddings_cover_seq", f"learned position table holds {m.max_position_embeddings} positions < seq {x.job.seq_length}",
                  f"use --seq-length {m.max_position_embeddings}")
    return violation("position_embeddings_cover_seq", f"--max-position-embeddings {m.max_position_embeddings} < --seq-length {x.job.seq_length}",
              f"use --max-position-embeddings {x.job.seq_length} (RoPE has no table to outgrow)")


@rule(reads="hierarchical_cp_sizes cp cp_comm_type")
def hierarchical_cp(x: RuleInput) -> Optional[Violation]:
    """[20] --hierarchical-context-parallel-sizes must multiply to CP; --cp-comm-type a2a+p2p requires them."""
    r = x.recipe
    if r.hierarchical_cp_sizes:
        prod = 1
        for s in r.hierarchical_cp_sizes:
            prod *= s
        if prod != r.cp:
            return violation("hierarchical_cp", f"hierarchical CP sizes {list(r.hierarchical_cp_sizes)} multiply to {prod}, not CP={r.cp}",
                      "make the sizes multiply to --context-parallel-size")
    elif r.cp_comm_type.value == "a2a+p2p" and r.cp > 1:
        return violation("hierarchical_cp", "--cp-comm-type a2a+p2p requires --hierarchical-context-parallel-sizes",
                  "add --hierarchical-context-parallel-sizes or use p2p")
    return None


@rule(reads="cp cp_comm_type tp")
def cp_a2a_heads(x: RuleInput) -> Optional[Violation]:
    """a2a (Ulysses) CP scatters heads, of Q and of K/V: Transformer Engine asserts "cp_comm_type='a2a' requires
    num_heads % cp_size == 0 for Q, K, V" (TE d0067d0d dot_product_attention/context_parallel.py). Megatron hands TE
    the rank's query heads (heads / TP) and its un-expanded key/value groups (groups / TP, one when TP exceeds the
    groups; MLA's keys have one head per query head)."""
    r = x.recipe
    if r.cp == 1 or r.cp_comm_type.value != "a2a":
        return None
    m = x.model
    local = m.num_attention_heads // r.tp
    local_kv = local if m.multi_latent_attention else max(m.num_query_groups // r.tp, 1)
    if local % r.cp == 0 and local_kv % r.cp == 0:
        return None
    what = f"heads/TP = {local}" if local % r.cp else f"key/value groups per TP rank = {local_kv}"
    return violation("cp_a2a_heads", f"a2a context parallelism needs {what} divisible by CP={r.cp}", "use --cp-comm-type p2p")


@rule(reads="cp cp_comm_type")
def cp_comm_type_for_attention_variant(x: RuleInput) -> Optional[Violation]:
    """Context parallelism with sliding-window attention needs --cp-comm-type a2a or allgather, and with attention
    sinks (--softmax-type learnable) a2a: Transformer Engine's attn_forward_func_with_cp asserts "Context parallelism
    does not support sliding window attention with cp_comm_type=..." and "Context parallelism only supports
    softmax_type=... with cp_comm_type = 'a2a'" (TE d0067d0d dot_product_attention/context_parallel.py), at the first
    forward: Megatron passes window_size and softmax_type to TEDotProductAttention (core/extensions/
    transformer_engine.py) and its validate_args does not check them."""
    r, m = x.recipe, x.model
    if r.cp == 1:
        return None
    kind = r.cp_comm_type.value
    if m.attention_sinks and kind != "a2a":
        return violation("cp_comm_type_for_attention_variant", f"attention sinks (--softmax-type learnable) with CP={r.cp} "
                         f"need --cp-comm-type a2a, not {kind} (Transformer Engine asserts)",
                         "use --cp-comm-type a2a (heads and key/value groups per TP rank divisible by CP), or CP 1")
    windowed = m.window_size is not None and (m.window_layers is None or any(m.window_layers))
    if windowed and kind not in ("a2a", "allgather"):
        return violation("cp_comm_type_for_attention_variant", f"sliding-window attention with CP={r.cp} needs "
                         f"--cp-comm-type a2a or allgather, not {kind} (Transformer Engine asserts)",
                         "use --cp-comm-type allgather (or a2a), or CP 1")
    return None


def _connections_needed(x: RuleInput) -> Optional[str]:
    """Why this recipe needs CUDA_DEVICE_MAX_CONNECTIONS=1 (Megatron asserts it), or None when it does not: pre-Blackwell
    (arch < 10) with TP>1 or CP>1, unless FSDP or --overlap-moe-expert-parallel-comm."""
    r = x.recipe
    cc = getattr(x.profile, "compute_capability", None)
    if cc is None and getattr(x.profile, "vendor", None) == "amd":
        cc = 9  # Megatron reads torch's device major (training/utils/common_utils.py:get_device_arch_version); ROCm gfx9xx -> 9
    fsdp = r.dp_sharding.value in ("torch_fsdp2", "megatron_fsdp")
    if not fsdp and not r.overlap_moe_expert_parallel_comm and cc is not None and cc < 10 and (r.tp > 1 or r.cp > 1):
        return f"TP>1 or CP>1 on arch {cc}"
    return None


@rule(reads="dp_sharding overlap_moe_expert_parallel_comm tp cp")
def cuda_device_max_connections(x: RuleInput) -> Optional[Violation]:
    """[21] Pre-Blackwell (arch < 10) with TP>1 or CP>1: CUDA_DEVICE_MAX_CONNECTIONS must be 1 unless FSDP or
    --overlap-moe-expert-parallel-comm (then only warnings); FSDP2 / Megatron-FSDP require it NOT to be 1. Judged only
    when the launch environment is known (x.env not None); launch_environment_unknown says what to set otherwise."""
    if x.env is None:
        return None
    value = x.env.get("CUDA_DEVICE_MAX_CONNECTIONS")
    fsdp = x.recipe.dp_sharding.value in ("torch_fsdp2", "megatron_fsdp")
    if fsdp and value == "1":
        return violation("cuda_device_max_connections", "FSDP needs CUDA_DEVICE_MAX_CONNECTIONS != 1", "export CUDA_DEVICE_MAX_CONNECTIONS=8")
    needed = _connections_needed(x)
    if needed is not None and value != "1":
        got = "it is not set" if value is None else f"got {value!r}"
        return violation("cuda_device_max_connections", f"{needed} needs CUDA_DEVICE_MAX_CONNECTIONS=1 ({got})",
                         "export CUDA_DEVICE_MAX_CONNECTIONS=1")
    return None


def launch_environment_unknown(x: RuleInput, where: str) -> list[Violation]:
    """What the rules that read the launch environment would need of it, as warnings, when that environment is unknown
    (an argument file carries none; `where` says what was read): unknown is not unset, so nothing is judged against
    an empty environment, and the warning names the variable to state with --env."""
    needed = _connections_needed(x)
    if needed is None:
        return []
    return [violation("launch_environment_unknown",
                      f"{where} carries no launch environment: {needed} needs CUDA_DEVICE_MAX_CONNECTIONS=1, not judged",
                      "state the launch environment: --env CUDA_DEVICE_MAX_CONNECTIONS=1 (or check the launch script "
                      "that exports it)", severity="warning")]
