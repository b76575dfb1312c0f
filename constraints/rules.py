"""Legality rules: small pure functions, each mirroring one Megatron-LM check (named in its docstring).

Why pure functions over a RuleInput: `check` runs all of them on one recipe, and the solver runs the
same functions to build its legal tables, so the two can never disagree. A rule returns None when it
holds, else a Violation naming the rule, the offending values and the nearest fix. Rules for
parallel layout, batch and pipeline are here; feature rules (MoE, recompute, optimizer, precision)
are in rules_features.py. Sources: ../shared/facts/megatron-rules.md (numbers in brackets).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Mapping, Optional

from constraints.spec import JobSpec, ModelSpec, PipelineSchedule, Recipe, Strict
from constraints.stages import StageSplitError, expand_layout, virtual_stage_layer_counts


class Violation(Strict):
    rule: str
    message: str
    fix: str
    severity: str = "error"  # "error" makes the recipe illegal; "warning" is what Megatron only warns about


@dataclass(frozen=True)
class RuleInput:
    model: ModelSpec
    job: JobSpec
    recipe: Recipe
    world_size: int
    profile: object = None  # hardware.profile.HardwareProfile, when known
    flags: Mapping[str, object] = field(default_factory=dict)  # raw Megatron flags beyond Recipe
    env: Optional[Mapping[str, str]] = None  # launch environment, when known (scripts)


Rule = Callable[[RuleInput], Optional[Violation]]
RULES: list[Rule] = []


# Recipe fields that decide the pipeline split (constraints.stages.virtual_stage_layer_counts reads them all)
UNEVEN_SPLIT_FIELDS = ("first_stage_layers last_stage_layers account_for_embedding_in_pipeline_split "
                       "account_for_loss_in_pipeline_split")
SPLIT_FIELDS = "pp vpp pipeline_layout " + UNEVEN_SPLIT_FIELDS


def rule(fn: Optional[Rule] = None, *, reads: Optional[str] = None):
    """Register a rule: `@rule` or `@rule(reads="tp pp cp")`.

    `reads` names every Recipe field the rule may look at, on any path (properties spelled as their fields:
    etp_effective = tp etp, sp_active = sequence_parallel tp, dp() = tp pp cp, expert_dp() = tp etp ep pp);
    model, job, world size, profile, flags and env are free to read. Why: the solver memoises a rule's
    verdict by the values of these fields alone (solver/table_rules.py), so a field missing here makes the
    solver wrong; tests/test_solver_speed_rule_reads.py varies every other field and holds the verdict.
    None (undeclared) means every field."""
    def register(f: Rule) -> Rule:
        f.reads = None if reads is None else frozenset(reads.split())
        RULES.append(f)
        return f

    return register if fn is None else register(fn)


def divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0] if n > 0 else []


def nearest(candidates: list[int], target: int) -> Optional[int]:
    """Closest candidate (ties: the smaller), for 'the nearest legal value' fixes."""
    return min(candidates, key=lambda c: (abs(c - target), c)) if candidates else None


def _v(name: str, message: str, fix: str, severity: str = "error") -> Violation:
    return Violation(rule=name, message=message, fix=fix, severity=severity)


# ---------------------------------------------------------------- world / data parallel
@rule(reads="tp pp cp")
def world_divisible(x: RuleInput) -> Optional[Violation]:
    """[1] world_size % (TP*PP*CP) == 0 (arguments.py validate_args; parallel_state.initialize_model_parallel)."""
    r = x.recipe
    mp = r.tp * r.pp * r.cp
    if x.world_size % mp == 0:
        return None
    ok = [d for d in divisors(x.world_size) if d % (r.tp * r.cp) == 0]
    pp = nearest([d // (r.tp * r.cp) for d in ok], r.pp)
    return _v("world_divisible", f"world size {x.world_size} is not divisible by TP*PP*CP = {r.tp}*{r.pp}*{r.cp} = {mp}",
              f"use --pipeline-model-parallel-size {pp}" if pp else "choose TP*CP dividing the world size")


@rule(reads="tp etp ep pp")
def expert_grid(x: RuleInput) -> Optional[Violation]:
    """[2] world_size % (ETP*EP*PP) == 0; expert-DP = world/(ETP*EP*PP) (parallel_state expert grid,
    --expert-tensor-parallel-size, --expert-model-parallel-size)."""
    r = x.recipe
    grid = r.etp_effective * r.ep * r.pp
    if x.world_size % grid == 0:
        return None
    per_pp = x.world_size // r.pp if x.world_size % r.pp == 0 else x.world_size
    ep = nearest([d for d in divisors(per_pp // r.etp_effective if per_pp % r.etp_effective == 0 else 1)], r.ep)
    return _v("expert_grid", f"world size {x.world_size} is not divisible by ETP*EP*PP = {r.etp_effective}*{r.ep}*{r.pp} = {grid}",
              f"use --expert-model-parallel-size {ep}")


@rule(reads="tp pp cp ep etp")
def expert_dp_matches_dp(x: RuleInput) -> Optional[Violation]:
    """[2] With a rank order whose PP is not outermost (--use-tp-pp-dp-mapping) and PP>1, the dense and
    expert grids only share PP groups if expert-DP*EP*ETP lines up with DP*CP*TP, i.e. expert-DP == DP."""
    r = x.recipe
    if not x.flags.get("use_tp_pp_dp_mapping") or r.pp == 1 or r.ep * r.etp_effective == 1:
        return None
    if r.expert_dp(x.world_size) == r.dp(x.world_size):
        return None
    return _v("expert_dp_matches_dp", f"expert-DP {r.expert_dp(x.world_size)} != DP {r.dp(x.world_size)} under --use-tp-pp-dp-mapping with PP>1",
              "drop --use-tp-pp-dp-mapping (default order tp-cp-ep-dp-pp) or make EP*ETP equal TP*CP")


@rule(reads="num_distributed_optimizer_instances tp pp cp")
def distributed_optimizer_instances(x: RuleInput) -> Optional[Violation]:
    """[3] (DP*CP) % --num-distributed-optimizer-instances == 0 (parallel_state)."""
    r = x.recipe
    n = r.num_distributed_optimizer_instances
    dpcp = r.dp(x.world_size) * r.cp
    if n == 1 or (dpcp and dpcp % n == 0):
        return None
    return _v("distributed_optimizer_instances", f"DP*CP = {dpcp} is not divisible by --num-distributed-optimizer-instances {n}",
              f"use --num-distributed-optimizer-instances {nearest(divisors(max(dpcp, 1)), n)}")


# ---------------------------------------------------------------- batch
@rule(reads="tp pp cp mbs")
def global_batch_divisible(x: RuleInput) -> Optional[Violation]:
    """[5] --global-batch-size % (--micro-batch-size * DP) == 0 (num_microbatches_calculator)."""
    r = x.recipe
    if x.world_size % (r.tp * r.pp * r.cp):
        return None  # world_divisible reports it
    dp = r.dp(x.world_size)
    gbs = x.job.global_batch_size
    if gbs % (r.mbs * dp) == 0:
        return None
    mbs = nearest([d for d in divisors(gbs // dp)] if gbs % dp == 0 else [], r.mbs)
    fix = (f"use --micro-batch-size {mbs}" if mbs else
           f"use --global-batch-size {max(r.mbs * dp, gbs // (r.mbs * dp) * r.mbs * dp)}")
    return _v("global_batch_divisible", f"global batch {gbs} is not divisible by MBS*DP = {r.mbs}*{dp} = {r.mbs * dp}", fix)


# ---------------------------------------------------------------- pipeline split
@rule(reads=SPLIT_FIELDS)
def one_virtual_pipeline_spec(x: RuleInput) -> Optional[Violation]:
    """[7][8] A layout string fixes VPP itself and excludes first/last-stage and account-for-* flags."""
    r = x.recipe
    if not r.pipeline_layout:
        return None
    try:
        n_stages = len(expand_layout(r.pipeline_layout))
    except StageSplitError as exc:
        return _v("pipeline_layout", str(exc), "write stages as e.g. 'Et*3|t*4|t*4|t*3L'")
    if n_stages % r.pp:
        return _v("pipeline_layout", f"layout has {n_stages} stages, not a multiple of PP={r.pp}",
                  f"give PP*VPP stages, e.g. {r.pp * max(1, n_stages // r.pp)}")
    if n_stages // r.pp != r.vpp:
        return _v("pipeline_layout", f"layout implies VPP={n_stages // r.pp} but the recipe says {r.vpp}", f"set vpp {n_stages // r.pp}")
    if r.first_stage_layers or r.last_stage_layers or r.account_for_embedding_in_pipeline_split or r.account_for_loss_in_pipeline_split:
        return _v("pipeline_layout", "--pipeline-model-parallel-layout cannot be combined with first/last-stage or account-for-* flags",
                  "drop the first/last-stage and account-for-* flags")
    return None


@rule(reads=UNEVEN_SPLIT_FIELDS)
def uneven_split_exclusive(x: RuleInput) -> Optional[Violation]:
    """[11] Uneven first/last stages cannot be combined with --account-for-*-in-pipeline-split."""
    r = x.recipe
    if (r.first_stage_layers or r.last_stage_layers) and (r.account_for_embedding_in_pipeline_split or r.account_for_loss_in_pipeline_split):
        return _v("uneven_split_exclusive", "--decoder-first/last-pipeline-num-layers cannot be combined with --account-for-*-in-pipeline-split",
                  "drop the account-for-* flags")
    return None


@rule(reads=SPLIT_FIELDS)
def layers_split(x: RuleInput) -> Optional[Violation]:
    """[9][10][11] The decoder layers (+1 per account-for flag) must split over PP (x VPP) stages; uneven
    first/last stages must leave a positive, evenly divisible middle; each chunk needs >= 1 layer
    (TransformerConfig, validate_args)."""
    r = x.recipe
    try:
        counts = virtual_stage_layer_counts(x.model, r)
    except StageSplitError as exc:
        L = x.model.num_layers
        extra = int(r.account_for_embedding_in_pipeline_split) + int(r.account_for_loss_in_pipeline_split)
        ok = [p for p in divisors(L + extra) if (L + extra) % (p * r.vpp) == 0]
        fix = f"use --pipeline-model-parallel-size {nearest(ok, r.pp)}" if ok and not r.pipeline_layout else "change the layer split"
        return _v("layers_split", str(exc), fix)
    if sum(counts) != x.model.num_layers:
        return _v("layers_split", f"pipeline split holds {sum(counts)} decoder layers, model has {x.model.num_layers}",
                  "make the layout hold exactly num_layers 't' entries")
    empty = [i for i, n in enumerate(counts) if n == 0 and not r.pipeline_layout and not (r.account_for_embedding_in_pipeline_split or r.account_for_loss_in_pipeline_split)]
    if empty:
        return _v("layers_split", f"virtual stage(s) {empty} would hold no decoder layer", "use fewer pipeline stages or virtual stages")
    return None


@rule(reads="vpp pp overlap_p2p_comm")
def interleaved_needs_pp(x: RuleInput) -> Optional[Violation]:
    """[12] Interleaving (VPP>1) needs PP>1 with --overlap-p2p-communication (default), else PP>2 (validate_args)."""
    r = x.recipe
    if r.vpp == 1:
        return None
    need = 2 if r.overlap_p2p_comm else 3
    if r.pp >= need:
        return None
    return _v("interleaved_needs_pp", f"VPP={r.vpp} needs PP >= {need}, got PP={r.pp}",
              "drop the virtual pipeline (VPP=1)" if r.pp == 1 else "enable --overlap-p2p-communication or use PP >= 3")


@rule(reads="schedule vpp")
def schedule_matches_vpp(x: RuleInput) -> Optional[Violation]:
    """shardplan's schedule enum vs VPP: interleaved <=> VPP>1 (Megatron picks the interleaved schedule when
    VPP is set); ZB-V runs exactly 2 chunks per rank; ZB-H1 and 1F1B one."""
    r = x.recipe
    want = {PipelineSchedule.interleaved: r.vpp > 1, PipelineSchedule.zbv: r.vpp == 2,
            PipelineSchedule.one_f_one_b: r.vpp == 1, PipelineSchedule.zb_h1: r.vpp == 1}[r.schedule]
    if want:
        return None
    fix = {PipelineSchedule.interleaved: "set vpp >= 2", PipelineSchedule.zbv: "set vpp 2"}.get(r.schedule, "set vpp 1 or schedule interleaved")
    return _v("schedule_matches_vpp", f"schedule {r.schedule.value} does not run with VPP={r.vpp}", fix)


@rule(reads="vpp pp schedule tp cp mbs microbatch_group_size")
def interleaved_microbatches(x: RuleInput) -> Optional[Violation]:
    """[13] Interleaved schedule (schedules.py): group size N (--microbatch-group-size-per-virtual-pipeline-stage,
    default PP) must be in [PP, M], and M % N must be 0 or >= PP."""
    r = x.recipe
    if r.vpp == 1 or r.pp == 1 or r.schedule != PipelineSchedule.interleaved or x.world_size % (r.tp * r.pp * r.cp):
        return None
    dp = r.dp(x.world_size)
    if x.job.global_batch_size % (r.mbs * dp):
        return None
    m = x.job.global_batch_size // (r.mbs * dp)
    n = r.microbatch_group_size or r.pp
    if r.pp <= n <= m and (m % n == 0 or m % n >= r.pp):
        return None
    good = [g for g in range(r.pp * r.mbs * dp, 4 * max(x.job.global_batch_size, r.pp * r.mbs * dp) + 1, r.mbs * dp)
            if (g // (r.mbs * dp)) % n == 0 and g // (r.mbs * dp) >= n]
    return _v("interleaved_microbatches", f"interleaved schedule needs micro-batches M={m} >= group {n} and M % {n} in {{0}} or >= PP={r.pp}",
              f"use --global-batch-size {nearest(good, x.job.global_batch_size)}" if good else "drop interleaving")


# ---------------------------------------------------------------- attention / TP / SP / CP
@rule(reads="tp")
def heads_divisible_by_tp(x: RuleInput) -> Optional[Violation]:
    """[14] --num-attention-heads % TP == 0 (TransformerConfig)."""
    a, tp = x.model.num_attention_heads, x.recipe.tp
    if a % tp == 0:
        return None
    return _v("heads_divisible_by_tp", f"{a} attention heads are not divisible by TP={tp}",
              f"use --tensor-model-parallel-size {nearest([d for d in divisors(a) if x.world_size % d == 0], tp)}")


@rule(reads="tp")
def query_groups_vs_tp(x: RuleInput) -> Optional[Violation]:
    """[15] --num-query-groups must be a multiple or a divisor of TP (TransformerConfig)."""
    g, tp = x.model.num_query_groups, x.recipe.tp
    if x.model.multi_latent_attention or g % tp == 0 or tp % g == 0:
        return None
    ok = [d for d in divisors(x.world_size) if g % d == 0 or d % g == 0]
    return _v("query_groups_vs_tp", f"{g} query groups are neither a multiple nor a divisor of TP={tp}",
              f"use --tensor-model-parallel-size {nearest(ok, tp)}")


@rule(reads="sequence_parallel tp")
def sequence_parallel_needs_tp(x: RuleInput) -> Optional[Violation]:
    """[16] --sequence-parallel with TP=1 is silently turned off by validate_args (a warning, not an error)."""
    if x.recipe.sequence_parallel and x.recipe.tp == 1:
        return _v("sequence_parallel_needs_tp", "--sequence-parallel has no effect at TP=1 (Megatron turns it off)",
                  "drop --sequence-parallel", "warning")
    return None


@rule(reads="cp tp sequence_parallel")
def sequence_parallel_divides_seq(x: RuleInput) -> Optional[Violation]:
    """SP scatters the (CP-local) sequence over TP ranks: (seq/CP) % TP == 0 (tensor_parallel mappings assert)."""
    r = x.recipe
    local = x.job.seq_length // r.cp
    if not r.sp_active or local % r.tp == 0:
        return None
    return _v("sequence_parallel_divides_seq", f"sequence {x.job.seq_length}/CP={r.cp} = {local} tokens do not split over TP={r.tp}",
              f"use --seq-length {-(-x.job.seq_length // (r.tp * r.cp)) * r.tp * r.cp}")


@rule(reads="tp_comm_overlap sequence_parallel tp")
def tp_comm_overlap_needs_sp(x: RuleInput) -> Optional[Violation]:
    """[17] --tp-comm-overlap requires --sequence-parallel."""
    if x.recipe.tp_comm_overlap and not x.recipe.sp_active:
        return _v("tp_comm_overlap_needs_sp", "--tp-comm-overlap requires --sequence-parallel (and TP>1)", "add --sequence-parallel or drop --tp-comm-overlap")
    return None


@rule(reads="cp")
def context_parallel_seq(x: RuleInput) -> Optional[Violation]:
    """[19] CP>1 needs --seq-length % (2*CP) == 0 (load-balanced causal chunks; validate_args)."""
    cp, s = x.recipe.cp, x.job.seq_length
    if cp == 1 or s % (2 * cp) == 0:
        return None
    return _v("context_parallel_seq", f"--seq-length {s} is not divisible by 2*CP = {2 * cp}",
              f"use --context-parallel-size {nearest([c for c in divisors(s // 2) if x.world_size % c == 0], cp)} or --seq-length {-(-s // (2 * cp)) * 2 * cp}")


@rule(reads="")
def position_embeddings_cover_seq(x: RuleInput) -> Optional[Violation]:
    """[19] --max-position-embeddings >= --seq-length for a learned absolute position table."""
    m = x.model
    if not m.learned_position_embeddings or m.max_position_embeddings >= x.job.seq_length:
        return None
    return _v("position_embeddings_cover_seq", f"learned position table holds {m.max_position_embeddings} positions < seq {x.job.seq_length}",
              f"use --seq-length {m.max_position_embeddings}")


@rule(reads="hierarchical_cp_sizes cp cp_comm_type")
def hierarchical_cp(x: RuleInput) -> Optional[Violation]:
    """[20] --hierarchical-context-parallel-sizes must multiply to CP; --cp-comm-type a2a+p2p requires them."""
    r = x.recipe
    if r.hierarchical_cp_sizes:
        prod = 1
        for s in r.hierarchical_cp_sizes:
            prod *= s
        if prod != r.cp:
            return _v("hierarchical_cp", f"hierarchical CP sizes {list(r.hierarchical_cp_sizes)} multiply to {prod}, not CP={r.cp}",
                      "make the sizes multiply to --context-parallel-size")
    elif r.cp_comm_type.value == "a2a+p2p" and r.cp > 1:
        return _v("hierarchical_cp", "--cp-comm-type a2a+p2p requires --hierarchical-context-parallel-sizes", "add --hierarchical-context-parallel-sizes or use p2p")
    return None


@rule(reads="cp cp_comm_type tp")
def cp_a2a_heads(x: RuleInput) -> Optional[Violation]:
    """a2a (Ulysses) CP scatters heads: (heads/TP) % CP == 0 (TE DotProductAttention with cp_comm_type a2a)."""
    r = x.recipe
    if r.cp == 1 or r.cp_comm_type.value != "a2a":
        return None
    local = x.model.num_attention_heads // r.tp
    if local % r.cp == 0:
        return None
    return _v("cp_a2a_heads", f"a2a context parallelism needs heads/TP = {local} divisible by CP={r.cp}", "use --cp-comm-type p2p")


@rule(reads="dp_sharding overlap_moe_expert_parallel_comm tp cp")
def cuda_device_max_connections(x: RuleInput) -> Optional[Violation]:
    """[21] Pre-Blackwell (arch < 10) with TP>1 or CP>1: CUDA_DEVICE_MAX_CONNECTIONS must be 1 unless FSDP or
    --overlap-moe-expert-parallel-comm (then only warnings); FSDP2 / Megatron-FSDP require it NOT to be 1."""
    if x.env is None:
        return None
    r = x.recipe
    cc = getattr(x.profile, "compute_capability", None)
    value = x.env.get("CUDA_DEVICE_MAX_CONNECTIONS")
    fsdp = r.dp_sharding.value in ("torch_fsdp2", "megatron_fsdp")
    if fsdp and value == "1":
        return _v("cuda_device_max_connections", "FSDP needs CUDA_DEVICE_MAX_CONNECTIONS != 1", "export CUDA_DEVICE_MAX_CONNECTIONS=8")
    if (not fsdp and not r.overlap_moe_expert_parallel_comm and cc is not None and cc < 10
            and (r.tp > 1 or r.cp > 1) and value != "1"):
        return _v("cuda_device_max_connections", f"TP>1 or CP>1 on arch {cc} needs CUDA_DEVICE_MAX_CONNECTIONS=1 (got {value!r})",
                  "export CUDA_DEVICE_MAX_CONNECTIONS=1")
    return None


def check_rules(x: RuleInput) -> list[Violation]:
    """Every rule's verdict on one input (feature rules included), in registration order."""
    import constraints.rules_features  # noqa: F401  (registers the feature rules)

    return [v for v in (fn(x) for fn in RULES) if v is not None]
