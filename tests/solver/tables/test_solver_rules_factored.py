"""The solver's factorised legality equals check_rules on full recipes.

solver/tables/rules.py judges each rule group on the table whose axes it reads (and caches activation
verdicts without ETP and the split); this enumerates every full assignment of a small MoE space, asks
check_rules about each complete recipe, and requires the tables to hold exactly the legal ones."""
from __future__ import annotations

import itertools

from constraints.models.load import load_model
from constraints.rules.registry import RuleInput, check_rules
from constraints.spec import JobSpec, Placement
from hardware.profile import load_profile
from solver.space import build_space, make_recipe
from solver.splits import split_choices
from solver.tables.build import build_tables
from solver.tables.rules import schedule_vpp_pairs

PINS = {"tp": [1, 2, 4], "pp": [1, 2, 4], "vpp": [1, 2, 3], "cp": [1, 2], "ep": [1, 2, 8], "etp": [1, 2], "mbs": [1, 2],
        "recompute": ["none", "selective:core_attn+moe_act", "full:uniform:1", "full:block:8"],
        "schedule": ["1f1b", "interleaved", "zb-h1", "zbv"]}


def test_tables_hold_exactly_the_rule_legal_recipes():
    model = load_model("Mixtral-8x7B-v0.1")
    job = JobSpec(seq_length=4096, global_batch_size=16)
    pl = Placement(hardware="h100-sxm-80gb", num_nodes=2, gpus_per_node=8)
    prof = load_profile(pl.hardware)
    space = build_space(model, job, pl, pins=PINS)
    t = build_tables(space, prof)
    in_tables = {(t.struct[s], mbs, bool(sp and t.struct[s][0] > 1), rc, t.shardings[h], bool(tpo))
                 for a, h in zip(t.cand_act.tolist(), t.cand_shard.tolist()) for s, mbs, sp, rc, tpo in [t.act_rows[a]]}
    d = space.domains
    from solver.space import recompute_choices, recompute_name

    rc_of = {recompute_name(r): (i, r) for i, r in enumerate(recompute_choices(model))}
    legal = checked = uneven = 0
    for tp, pp, cp, ep, etp in itertools.product(d["tp"], d["pp"], d["cp"], d["ep"], d["etp"]):
        if 16 % (tp * pp * cp):
            continue
        for (sched, vpp), mbs, sp, rc_name, sh, tpo in itertools.product(schedule_vpp_pairs(space, pp), d["mbs"], d["sp"],
                                                                         d["recompute"], d["dp_sharding"], d["tp_comm_overlap"]):
            # the space tries TP comm overlap only with SP at TP>1 (its rule rejects the rest)
            if (sp and tp == 1) or (tpo and not (sp and tp > 1)):
                continue
            for acc in split_choices(model, pp, vpp, d["acc_split"], True):  # even, account-for, uneven first/last
                rci, rc = rc_of[rc_name]
                r = make_recipe(tp, pp, vpp, cp, ep, etp, mbs, sp, rc, sched, sh, acc, tpo)
                ok = not any(v.severity == "error" for v in check_rules(RuleInput(model, job, r, pl.world_size, prof)))
                key = ((tp, pp, vpp, cp, ep, etp, sched, acc), mbs, bool(sp and tp > 1), rci, sh, tpo)
                if ok and sh != "distributed_optimizer" and 16 // (tp * pp) == 1 and 16 // (etp * ep * pp) == 1:
                    # nothing shards (DP x CP = expert DP = 1): the distributed optimizer's twin stands for it
                    # (solver/table_rules.one_sharding_when_nothing_shards), unless the twin is illegal
                    twin = make_recipe(tp, pp, vpp, cp, ep, etp, mbs, sp, rc, sched, "distributed_optimizer", acc, tpo)
                    ok = any(v.severity == "error" for v in check_rules(RuleInput(model, job, twin, pl.world_size, prof)))
                assert ok == (key in in_tables), (r.model_dump(exclude_defaults=True), ok)
                legal += ok
                checked += 1
                uneven += ok and isinstance(acc, tuple)
    assert legal == len(in_tables) and legal > 100 and checked > legal + 1000  # both verdicts well represented
    assert uneven > 10  # explicit first/last stage splits are among them
