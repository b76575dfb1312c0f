"""The memory tables' shortcuts give the bytes of the plain per-recipe functions.

solver/tables/memory.py caches static bytes by what static_from_params reads and finds distinct keys with
presence tables instead of sorts; both must be invisible in the numbers.
"""
from __future__ import annotations

import numpy as np

from constraints.memory import per_rank as mem
from constraints.models.load import load_model
from constraints.spec import JobSpec, Placement
from hardware.profile import load_profile
from solver.space import build_space, make_recipe, recompute_choices
from solver.tables.build import build_tables
from solver.tables.codes import unique_codes
from solver.tables.memory import MemoryTables, make_split

PINS = {"tp": [1, 2, 4], "pp": [1, 2, 4], "vpp": [1, 2, 3], "cp": [1, 2], "ep": [1, 2, 8], "etp": [1, 2], "mbs": [1, 2],
        "recompute": ["none", "full:uniform:1"], "schedule": ["1f1b", "interleaved", "zbv"],
        "dp_sharding": ["none", "distributed_optimizer", "megatron_fsdp"]}


def test_static_bytes_equal_static_terms_of_every_row():
    model = load_model("Mixtral-8x7B-v0.1")
    job = JobSpec(seq_length=4096, global_batch_size=16, optimizer="muon")
    pl = Placement(hardware="h100-sxm-80gb", num_nodes=2, gpus_per_node=8)
    space = build_space(model, job, pl, pins=PINS)
    t = build_tables(space, load_profile(pl.hardware))

    rc0 = recompute_choices(model)[0]
    checked = 0
    for i, (tp, pp, vpp, cp, ep, etp, sched, acc) in enumerate(t.struct):
        split = make_split(model, pp, vpp, acc)
        for k, sh in enumerate(t.shardings):
            if not t.static_ok[i, k]:
                continue
            r = make_recipe(tp, pp, vpp, cp, ep, etp, 1, tp > 1, rc0, sched, sh, acc)
            want = [sum(mem.static_terms(model, job, r, pl.world_size, split.chunks[ranks[0]]).values()) for ranks in split.classes]
            got = t.static_bytes[i * len(t.shardings) + k].tolist()
            assert got[:len(want)] == want and not any(got[len(want):]), (r.model_dump(exclude_defaults=True), got, want)
            checked += 1
    assert checked > 200


def test_unique_codes_matches_numpy_unique():
    rng = np.random.default_rng(0)
    for high in (3, 70, 1 << 40):  # presence tables, and the sort for wide values
        keys = rng.integers(0, high, size=(5000, 4), dtype=np.int64)
        keys[:, 1] = keys[:, 1] % 5  # mixed widths
        uniq, inv = unique_codes(keys)
        want, want_inv = np.unique(keys, axis=0, return_inverse=True)
        assert np.array_equal(uniq, want) and np.array_equal(inv, want_inv.reshape(-1))
        assert np.array_equal(uniq[inv], keys)


def test_static_table_equals_static_row_per_accepted_pair():
    model = load_model("DeepSeek-V3")  # MTP, first-k-dense layers, uneven splits: classes differ in contents
    job = JobSpec(seq_length=4096, global_batch_size=256)
    pl = Placement(hardware="h800-sxm-80gb", num_nodes=8, gpus_per_node=8)
    t = build_tables(build_space(model, job, pl, pins={"tp": [2, 8], "cp": [1], "mbs": [1], "recompute": ["none"]}),
                     load_profile(pl.hardware))
    splits = {(pp, vpp, acc): make_split(model, pp, vpp, acc) for _, pp, vpp, _, _, _, _, acc in t.struct}
    memt = MemoryTables(t.space, t.profile, t.rc_choices, splits, t.static_bytes.shape[1])
    table = memt.static_table(t.struct, t.static_ok, t.shardings)
    want = np.zeros_like(table)
    for i, row in enumerate(t.struct):
        for k, sh in enumerate(t.shardings):
            if t.static_ok[i, k]:
                want[i * len(t.shardings) + k] = memt.static_row(row, sh)
    assert np.array_equal(table, want) and np.array_equal(table, t.static_bytes) and table.any()
