"""Random recipes for bench/megatron/diff.py: a legal-looking draw over every recipe axis, then (for a share of
draws) one or two deliberate breaks, each judged by shardplan's `check_case` and rendered to Megatron arguments.

Why apart: the drawing is the part one edits to reach new axes; the harness (validator batching, tables) stays put.
"""
from __future__ import annotations

import random
from functools import lru_cache
from typing import Any, Optional

from constraints.case import Case
from constraints.check import check_case
from constraints.models.load import bundled_models, load_model
from constraints.spec import (
    CpCommType,
    DataParallelSharding,
    JobSpec,
    ModelSpec,
    MoeDispatcher,
    Optimizer,
    PipelineSchedule,
    Placement,
    Precision,
    Recipe,
    Recompute,
    RecomputeGranularity,
    RecomputeMethod,
    RecomputeModule,
)
from constraints.stages import StageSplitError, virtual_stage_layer_counts
from hardware.profile import available_profiles, load_profile
from templates.recipe_args import needs_cuda_device_max_connections_1, recipe_to_megatron_args, uses_fsdp

ILLEGAL_SHARE = 0.35  # share of draws that get deliberate breaks on top of the legal-looking draw


@lru_cache(maxsize=None)
def _model(name: str) -> ModelSpec:
    return load_model(name)


@lru_cache(maxsize=None)
def _profile(name: str):
    return load_profile(name)


def sm_of(profile) -> int:
    """The major compute capability the validator should report (env SM). AMD profiles carry None; ROCm torch
    reports gfx942 (MI300X/MI325X) as 9.4 and gfx950 (MI355X) as 9.5, so major 9."""
    cc = profile.compute_capability
    return 9 if cc is None else int(cc)


def _divs(n: int, cap: int = 1 << 30) -> list[int]:
    return [d for d in range(1, min(n, cap) + 1) if n % d == 0]


def _precisions(profile) -> list[Precision]:
    out = [Precision.bf16, Precision.bf16, Precision.fp16]
    if profile.supports_fp8:
        out += [Precision.fp8_delayed, Precision.fp8_tensorwise, Precision.fp8_blockwise]
    if profile.supports_mxfp8:
        out += [Precision.mxfp8]
    if profile.vendor == "nvidia" and (profile.compute_capability or 0) >= 10:  # NVFP4 (constraints/rules/fp4.py)
        out += [Precision.nvfp4]
    return out


def _recompute(rng: random.Random, m: ModelSpec, layers_per_rank: int) -> Recompute:
    kind = rng.choice(["none", "none", "selective", "selective", "full"])
    if kind == "none":
        return Recompute()
    if kind == "full":
        method = rng.choice([RecomputeMethod.uniform, RecomputeMethod.block])
        return Recompute.full(method, rng.randint(1, max(1, layers_per_rank)))
    pool = [RecomputeModule.core_attn, RecomputeModule.layernorm, RecomputeModule.mlp]
    if m.is_moe:
        pool += [RecomputeModule.moe, RecomputeModule.moe_act]
        if m.moe_shared_expert_intermediate_size:
            pool += [RecomputeModule.shared_experts]
    if m.multi_latent_attention:
        pool += [RecomputeModule.mla_up_proj]
    return Recompute.selective(*rng.sample(pool, rng.randint(1, min(3, len(pool)))))


def _uneven(rng: random.Random, m: ModelSpec, pp: int, vpp: int) -> tuple[Optional[int], Optional[int]]:
    """A first/last pair that leaves an evenly divisible middle (tries a few), else even."""
    for _ in range(12):
        base = m.num_layers // pp
        first = rng.choice([None, max(1, base - rng.randint(1, 3))])
        last = rng.choice([None, max(1, base - rng.randint(1, 3))])
        if first is None and last is None:
            continue
        probe = Recipe(pp=pp, vpp=vpp, first_stage_layers=first, last_stage_layers=last)
        try:
            virtual_stage_layer_counts(m, probe)
        except StageSplitError:
            continue
        return first, last
    return None, None


def legal_looking(rng: random.Random) -> tuple[str, str, int, int, JobSpec, Recipe]:
    """A draw that respects the structural rules most of the time; the breaks come later."""
    name = rng.choice(bundled_models())
    hw = rng.choice(available_profiles())
    m, prof = _model(name), _profile(hw)
    gpn = prof.gpus_per_node
    nodes = rng.choice([1, 2, 4, 8, 16, 32, 64])
    world = nodes * gpn
    heads = m.num_attention_heads
    tp = rng.choice([t for t in (1, 2, 4, 8) if heads % t == 0 and t <= gpn and world % t == 0
                     and (m.multi_latent_attention or m.num_query_groups % t == 0 or t % m.num_query_groups == 0)] or [1])
    seq = rng.choice([2048, 4096, 4096, 8192, 16384, 32768])
    if m.learned_position_embeddings:
        seq = min(seq, m.max_position_embeddings)
    cp = rng.choice([1, 1, 1, 2, 4]) if world % (tp * 2) == 0 else 1
    if world % (tp * cp):
        cp = 1
    rest = world // (tp * cp)
    pp = rng.choice([p for p in _divs(rest, 16) if m.num_layers % p == 0 or rng.random() < 0.3] or [1])
    vpp = 1
    if pp > 1 and rng.random() < 0.4:
        per = m.num_layers // pp
        vpp = rng.choice([v for v in _divs(per, 8) if v > 1] or [1])
    schedule = PipelineSchedule.interleaved if vpp > 1 else PipelineSchedule.one_f_one_b
    if rng.random() < 0.04:
        schedule = rng.choice([PipelineSchedule.zb_h1, PipelineSchedule.zbv])
        vpp = 2 if schedule == PipelineSchedule.zbv else 1
    first = last = None
    acc_emb = acc_loss = False
    if pp > 1 and rng.random() < 0.2:
        first, last = _uneven(rng, m, pp, vpp)
    elif pp > 1 and rng.random() < 0.2:
        acc_emb, acc_loss = rng.choice([(True, True), (True, False), (False, True)])
    ep, etp = 1, None
    if m.is_moe:
        grid_room = world // pp
        etp = rng.choice([None, 1, tp]) if not m.mlp_bias else rng.choice([None, 1]) if tp == 1 else 1
        etp_eff = tp if etp is None else etp
        ep = rng.choice([e for e in _divs(m.num_experts, 64) if (grid_room % (e * etp_eff) == 0)] or [1])
    mbs = rng.choice([1, 1, 2, 4])
    dp = world // (tp * pp * cp) if world % (tp * pp * cp) == 0 else 1
    mult = rng.choice([1, 2, 4, 8, 16])
    if vpp > 1:
        mult = pp * rng.choice([1, 2, 3, 4])
    gbs = mbs * dp * mult
    sp = tp > 1 and rng.random() < 0.85
    sharding = rng.choice([DataParallelSharding.distributed_optimizer] * 3 + [DataParallelSharding.none,
                          DataParallelSharding.megatron_fsdp, DataParallelSharding.torch_fsdp2])
    opt = rng.random() < 0.8
    overlap_grad = opt or rng.random() < 0.5
    overlap_param = sharding in (DataParallelSharding.distributed_optimizer, DataParallelSharding.megatron_fsdp) and overlap_grad and opt
    precision = rng.choice(_precisions(prof))
    per_rank = (m.num_layers // max(pp, 1))
    recipe = dict(tp=tp, pp=pp, vpp=vpp, cp=cp, ep=ep, etp=etp, mbs=mbs, sequence_parallel=sp,
                  recompute=_recompute(rng, m, per_rank), dp_sharding=sharding, schedule=schedule,
                  first_stage_layers=first, last_stage_layers=last, account_for_embedding_in_pipeline_split=acc_emb,
                  account_for_loss_in_pipeline_split=acc_loss, overlap_grad_reduce=overlap_grad,
                  overlap_param_gather=overlap_param, tp_comm_overlap=sp and rng.random() < 0.3,
                  cp_comm_type=rng.choice([CpCommType.p2p] * 3 + [CpCommType.a2a, CpCommType.allgather]) if cp > 1 else CpCommType.p2p)
    if m.is_moe:
        recipe.update(moe_dispatcher=rng.choice([MoeDispatcher.alltoall] * 3 + [MoeDispatcher.flex, MoeDispatcher.allgather]),
                      moe_grouped_gemm=rng.random() < 0.9,
                      overlap_moe_expert_parallel_comm=ep > 1 and (pp == 1 or vpp > 1) and rng.random() < 0.25,
                      moe_shared_expert_overlap=bool(m.moe_shared_expert_intermediate_size) and rng.random() < 0.2)
        if recipe["moe_dispatcher"] == MoeDispatcher.flex and tp * ep == 1:
            recipe["moe_dispatcher"] = MoeDispatcher.alltoall
        if recipe["overlap_moe_expert_parallel_comm"] and recipe["moe_dispatcher"] == MoeDispatcher.allgather:
            recipe["moe_dispatcher"] = MoeDispatcher.alltoall
    if precision.is_fp8 and sharding != DataParallelSharding.none and rng.random() < 0.2:
        recipe["fp8_param_gather"] = True
    if precision.is_fp4 and rng.random() < 0.3:
        recipe["fp4_param_gather"] = True
    if rng.random() < 0.1:
        recipe["cross_entropy_loss_fusion"] = False
    bf16_layers = {}
    if (precision.is_fp8 or precision.is_fp4) and precision != Precision.fp8_delayed and rng.random() < 0.25:
        cap = max(m.num_layers // pp, 1)  # Megatron's per-stage bound (rules_bf16_layers.py)
        bf16_layers = dict(bf16_layers_at_start=min(rng.choice([0, 1, 1, 2]), cap),
                           bf16_layers_at_end=min(rng.choice([0, 1, 2, 14]), cap))
    job = JobSpec(seq_length=seq, global_batch_size=gbs, precision=precision,
                  optimizer=Optimizer.muon if rng.random() < 0.03 else Optimizer.adam, **bf16_layers)
    return name, hw, nodes, gpn, job, Recipe(**recipe)


def _break(rng: random.Random, m: ModelSpec, world: int, job: JobSpec, r: Recipe) -> tuple[str, JobSpec, Recipe]:
    """One deliberate break (what it is called, the new job, the new recipe)."""
    u: dict[str, Any] = {}
    kind = rng.choice(["tp_heads", "gbs", "pp_layers", "vpp_big", "param_gather", "tp_overlap_nosp", "cp_seq", "ep",
                       "full_nolayers", "full_too_many", "mla_up_proj", "fsdp2_pp", "fp8_gather_bf16", "uneven_account",
                       "vpp_pp1", "ep_overlap", "dist_saved", "cpu_offload", "flex", "shared_overlap", "hier_cp",
                       "world", "mbs_big", "etp", "moe_act_nogg", "selective_method", "a2a_heads", "sp_seq",
                       "vpp_nooverlap_p2p", "micro_group", "fsdp2_tied", "dist_opt_instances", "recompute_moe_dense",
                       "env", "precision_hw", "mtp_uniform", "bf16_layers_delayed", "bf16_layers_many"])
    jobu: dict[str, Any] = {}
    if kind == "tp_heads":
        u["tp"] = rng.choice([3, 5, 6, 12, 16])
    elif kind == "gbs":
        jobu["global_batch_size"] = max(1, job.global_batch_size + rng.choice([-1, 1, 3]))
    elif kind == "pp_layers":
        u["pp"] = rng.choice([p for p in (3, 5, 6, 7, 16) if m.num_layers % p] or [7])
    elif kind == "vpp_big":
        u.update(pp=max(r.pp, 2), vpp=m.num_layers, schedule=PipelineSchedule.interleaved)
    elif kind == "param_gather":
        u.update(overlap_param_gather=True, dp_sharding=rng.choice([DataParallelSharding.none, DataParallelSharding.torch_fsdp2]))
    elif kind == "tp_overlap_nosp":
        u.update(tp_comm_overlap=True, sequence_parallel=False)
    elif kind == "cp_seq":
        u["cp"] = rng.choice([2, 4])
        jobu["seq_length"] = job.seq_length + rng.choice([2, 6, 100])
    elif kind == "ep":
        u["ep"] = rng.choice([3, 5, 7, 2])
    elif kind == "full_nolayers":
        u["recompute"] = Recompute(granularity=RecomputeGranularity.full)
    elif kind == "full_too_many":
        u["recompute"] = Recompute.full(rng.choice(list(RecomputeMethod)), m.num_layers + 1)
    elif kind == "mla_up_proj":
        u["recompute"] = Recompute.selective(RecomputeModule.mla_up_proj)
    elif kind == "fsdp2_pp":
        u.update(dp_sharding=DataParallelSharding.torch_fsdp2, pp=max(r.pp, 2), overlap_param_gather=False)
    elif kind == "fp8_gather_bf16":
        u["fp8_param_gather"] = True
        jobu["precision"] = Precision.bf16
    elif kind == "uneven_account":
        u.update(pp=max(r.pp, 2), first_stage_layers=1, account_for_embedding_in_pipeline_split=True)
    elif kind == "vpp_pp1":
        u.update(pp=1, vpp=2, schedule=PipelineSchedule.interleaved, first_stage_layers=None, last_stage_layers=None)
    elif kind == "ep_overlap":
        u.update(overlap_moe_expert_parallel_comm=True,
                 recompute=rng.choice([Recompute.full(RecomputeMethod.uniform, 1), Recompute.selective(RecomputeModule.moe), r.recompute]))
    elif kind == "dist_saved":
        u.update(distribute_saved_activations=True, recompute=rng.choice([Recompute.full(RecomputeMethod.uniform, 1), r.recompute]))
    elif kind == "cpu_offload":
        u["cpu_offloading_num_layers"] = 1
    elif kind == "flex":
        u.update(moe_dispatcher=MoeDispatcher.flex, tp=1, ep=1, etp=None)
    elif kind == "shared_overlap":
        u.update(moe_shared_expert_overlap=True, moe_dispatcher=MoeDispatcher.allgather)
    elif kind == "hier_cp":
        u.update(cp=2, cp_comm_type=CpCommType.a2a_p2p, hierarchical_cp_sizes=rng.choice([None, (2, 2)]))
    elif kind == "world":
        u["tp"] = r.tp * 2 if r.tp * 2 <= 16 else r.tp
        u["pp"] = r.pp * 3
    elif kind == "mbs_big":
        u["mbs"] = job.global_batch_size * 2
    elif kind == "etp":
        u["etp"] = rng.choice([2, 4, 8])
    elif kind == "moe_act_nogg":
        u.update(moe_grouped_gemm=False, recompute=Recompute.selective(RecomputeModule.moe_act))
    elif kind == "selective_method":
        u["recompute"] = Recompute(granularity=RecomputeGranularity.selective, modules=(RecomputeModule.core_attn,),
                                   method=RecomputeMethod.uniform, num_layers=1)
    elif kind == "a2a_heads":
        u.update(cp=rng.choice([2, 4, 8]), cp_comm_type=CpCommType.a2a)
    elif kind == "sp_seq":
        u.update(sequence_parallel=True, tp=max(r.tp, 2))
        jobu["seq_length"] = job.seq_length + 1
    elif kind == "vpp_nooverlap_p2p":
        u.update(pp=2, vpp=2, schedule=PipelineSchedule.interleaved, overlap_p2p_comm=False)
    elif kind == "micro_group":  # aims at the interleaved schedule's check; a zero-bubble draw renders as interleaved
        u["microbatch_group_size"] = rng.choice([1, r.pp + 1, 1000])
        if r.schedule in (PipelineSchedule.zb_h1, PipelineSchedule.zbv):
            u.update(schedule=PipelineSchedule.interleaved if r.vpp > 1 else PipelineSchedule.one_f_one_b)
    elif kind == "fsdp2_tied":
        u.update(dp_sharding=DataParallelSharding.torch_fsdp2, overlap_param_gather=False)
    elif kind == "dist_opt_instances":
        u["num_distributed_optimizer_instances"] = rng.choice([2, 3, 4])
    elif kind == "recompute_moe_dense":
        u["recompute"] = Recompute.selective(rng.choice([RecomputeModule.moe, RecomputeModule.moe_act, RecomputeModule.shared_experts]))
    elif kind == "precision_hw":  # FP8 / MXFP8 whatever the hardware supports
        jobu["precision"] = rng.choice([Precision.mxfp8, Precision.fp8_tensorwise])
    elif kind == "mtp_uniform":
        u["recompute"] = Recompute.full(RecomputeMethod.uniform, 2)
    elif kind == "bf16_layers_delayed":  # TransformerConfig: delayed scaling refuses first / last layers in bf16
        jobu.update(precision=Precision.fp8_delayed, bf16_layers_at_start=1, bf16_layers_at_end=1)
    elif kind == "bf16_layers_many":  # more bf16 layers than a pipeline stage holds
        jobu.update(precision=Precision.fp8_tensorwise, bf16_layers_at_start=0, bf16_layers_at_end=m.num_layers // r.pp + 1)
    # "env": the launch environment is flipped in draw_case
    return kind, job.model_copy(update=jobu), Recipe(**{**r.model_dump(), **u})


def judge_args(args: list[str], hw: str, nodes: int, gpn: int, prof, conn: str) -> tuple[Optional[bool], list[str]]:
    """`shardplan check` on the rendered argument list itself (the parser, flags and env path), as
    constraints/read.py builds it from a script: (legal, rules), or (None, [why]) when it cannot be read."""
    from constraints.megatron.argv_to_specs import parse_megatron_args

    try:
        cfg = parse_megatron_args(args, world_size=nodes * gpn)
        case = Case(model=cfg.model, job=cfg.job, recipe=cfg.recipe,
                    placement=Placement(hardware=hw, num_nodes=nodes, gpus_per_node=gpn))
        rep = check_case(case, prof, flags=dict(cfg.raw), env={"CUDA_DEVICE_MAX_CONNECTIONS": conn})
    except Exception as exc:
        return None, [f"{type(exc).__name__}: {str(exc)[:120]}"]
    return rep.legal, sorted({v.rule for v in rep.violations if v.rule != "memory_fits"})


def draw_case(rng: random.Random, case_id: str) -> dict:
    """One drawn recipe: shardplan's verdict and rules, its rendered args and what the validator needs."""
    name, hw, nodes, gpn, job, recipe = legal_looking(rng)
    m, prof = _model(name), _profile(hw)
    if m.mtp_num_layers and rng.random() < 0.5:  # the MTP depth is a training choice; one layer may serve every depth
        m = m.model_copy(update={"mtp_num_layers": rng.choice([1, 2, 3]), "mtp_repeated_layer": rng.random() < 0.5})
    breaks = []
    if rng.random() < ILLEGAL_SHARE:
        for _ in range(rng.choice([1, 1, 2])):
            kind, job, recipe = _break(rng, m, nodes * gpn, job, recipe)
            breaks.append(kind)
    try:
        case = Case(model=m, job=job, recipe=recipe, placement=Placement(hardware=hw, num_nodes=nodes, gpus_per_node=gpn))
    except ValueError:  # past shardplan's magnitude bounds (a huge GBS x sequence): not a recipe to compare; draw again
        return draw_case(rng, case_id)
    row: dict[str, Any] = {"id": case_id, "model": name, "hardware": hw, "nodes": nodes, "gpus_per_node": gpn,
                           "world": nodes * gpn, "sm": sm_of(prof), "breaks": breaks,
                           "job": job.model_dump(mode="json"), "recipe": recipe.model_dump(mode="json", exclude_defaults=True)}
    written = recipe if m.is_moe else recipe.model_copy(update={"overlap_moe_expert_parallel_comm": False})
    conn = "1" if needs_cuda_device_max_connections_1(written, prof.compute_capability) else ("8" if uses_fsdp(written) else "1")
    if "env" in breaks:  # the other setting: "8" where Megatron wants "1", "1" where FSDP wants it unset
        conn = "8" if conn == "1" else "1"
    row["cuda_device_max_connections"] = conn
    try:
        rep = check_case(case, prof, env={"CUDA_DEVICE_MAX_CONNECTIONS": conn})
        row.update(legal=rep.legal, rules=sorted({v.rule for v in rep.violations if v.rule != "memory_fits"}))
    except Exception as exc:  # a crash of check itself is a finding, not a verdict
        row.update(legal=False, rules=[f"check crashed: {type(exc).__name__}: {exc}"])
    mp = recipe.tp * recipe.pp * recipe.cp
    dp = nodes * gpn // mp if (nodes * gpn) % mp == 0 else None
    row["dp"] = dp
    row["num_microbatches"] = job.global_batch_size // (recipe.mbs * dp) if dp else None
    try:
        row["args"] = recipe_to_megatron_args(m, job, recipe)
    except Exception as exc:
        row.update(args=None, render_error=f"render failed: {type(exc).__name__}: {exc}")
    if row.get("args") is not None:
        row["args_legal"], row["args_rules"] = judge_args(row["args"], hw, nodes, gpn, prof, row["cuda_device_max_connections"])
    row["label"] = (f"{name} {hw} {nodes}x{gpn} tp{recipe.tp} pp{recipe.pp} vpp{recipe.vpp} cp{recipe.cp} ep{recipe.ep} "
                    f"etp{recipe.etp} mbs{recipe.mbs} gbs{job.global_batch_size} seq{job.seq_length} {job.precision.value}"
                    + (f" breaks={','.join(breaks)}" if breaks else ""))
    return row
