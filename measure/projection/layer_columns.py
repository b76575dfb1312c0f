"""One layer kind's row in the vectorised projection: LayerParts flattened to numbers, and finished on arrays.

Why apart from measure/projection/vectorized.py: the row layout (raw parts, EP traffic per dispatcher, forward time per
recomputable module) and `finish_columns` — measure.projection.layer_cost.finish_parts written on numpy columns — are one idea:
they let a single cached row per per-rank shape serve every recompute set, TP / EP overlap flag and dispatcher.
tests/measure/projection/test_vectorized.py holds `finish_columns` equal to `finish_parts` on random parts.
"""
from __future__ import annotations

import numpy as np

from constraints.spec import MoeDispatcher, RecomputeModule
from measure.projection.ep_overlap_schedule import exposed_ep_pair_s
from measure.projection.layer_cost import (
    RECOMPUTE_MODULES,
    LayerParts,
    comm_filled_host_wait_s,
    cp_bwd_exposed_s,
    overlapped_tp_s,
)
from measure.projection.recipe_batch import DISPATCHERS

KIND_COLS = ("F", "B", "W", "R", "S", "P", "E")  # per kind: fwd, bwd, wgrad, recompute fwd, selective, params

# raw layer columns per kind: measure.projection.layer_cost.LayerParts flattened (EP traffic per dispatcher, forward time per
# module that a --recompute-modules choice can re-run)
_RAW_FIXED = ("fwd", "dgrad", "wgrad", "tp_raw", "cp", "cp_b", "dense_params", "expert_params", "a2a_sort_f", "a2a_sort_b",
              "expert_f", "expert_d", "expert_w", "host_wait_f", "host_wait_b")
RECOMPUTE_MODULE_COLS = tuple(sorted(set().union(*RECOMPUTE_MODULES.values()) | {m.value for m in RecomputeModule}))
_EP0 = len(_RAW_FIXED)
_MOD0 = _EP0 + len(DISPATCHERS)
RAW_WIDTH = _MOD0 + len(RECOMPUTE_MODULE_COLS)
_ALLTOALL = DISPATCHERS.index(MoeDispatcher.alltoall)
_CORE_ATTN = _MOD0 + RECOMPUTE_MODULE_COLS.index("core_attn")  # no TP collective hides behind core attention


def finish_columns(raw: np.ndarray, sel_mask: np.ndarray, tpo: np.ndarray, disp: np.ndarray, epo: np.ndarray, cal,
                   paired: np.ndarray = 1.0) -> dict:
    """Kind columns (KIND_COLS, each [row, 1]) of one layer kind per row from its raw columns (`raw_cols`):
    measure.projection.layer_cost.finish_parts on arrays — selective recompute = the recomputed modules' forward time; TP
    traffic less what the pass's GEMMs hide where overlapped (layer_cost.overlapped_tp_s); the alltoall dispatcher's token
    re-sorts on its rows; the row dispatcher's EP traffic, of which EP overlap leaves what Megatron's combined 1F1B layer
    schedule shows (measure/projection/ep_overlap_schedule.py, the same function as the scalar path;
    tests/measure/projection/test_vectorized.py holds the two equal on random parts)."""
    f = cal.exposed_comm_fraction
    c = {name: raw[:, i] for i, name in enumerate(_RAW_FIXED)}
    ep = np.take_along_axis(raw[:, _EP0:_EP0 + len(DISPATCHERS)], disp[:, None], axis=1)[:, 0]
    a2a = disp == _ALLTOALL
    sort_f, sort_b = np.where(a2a, c["a2a_sort_f"], 0.0), np.where(a2a, c["a2a_sort_b"], 0.0)
    fwd, dgrad = c["fwd"] + sort_f, c["dgrad"] + sort_b
    tp_f, tp_b = overlapped_tp_s(c["tp_raw"], fwd - raw[:, _CORE_ATTN], dgrad + c["wgrad"], f)
    tp_f, tp_b = np.where(tpo, tp_f, c["tp_raw"]), np.where(tpo, tp_b, c["tp_raw"])
    exposed = exposed_ep_pair_s(fwd, dgrad, c["wgrad"], c["expert_f"] + sort_f, c["expert_d"] + sort_b, c["expert_w"], ep, f)
    ep_f = ep_b = np.where(epo, paired * exposed / 2 + (1.0 - paired) * ep, ep)
    fwd = fwd - comm_filled_host_wait_s(c["host_wait_f"], tp_f + ep_f + c["cp"])
    dgrad = dgrad - comm_filled_host_wait_s(c["host_wait_b"], tp_b + ep_b + c["cp_b"])
    sel = (raw[:, _MOD0:_MOD0 + len(RECOMPUTE_MODULE_COLS)] * sel_mask).sum(axis=1)
    cols = {"F": fwd + tp_f + ep_f + c["cp"], "B": dgrad + tp_b + ep_b + c["cp_b"], "W": c["wgrad"],
            "R": fwd + tp_f + ep_f, "S": sel, "P": c["dense_params"], "E": c["expert_params"]}
    return {k: v[:, None] for k, v in cols.items()}


def raw_cols(parts: LayerParts) -> list[float]:
    """The row of one LayerParts in the `_RAW_FIXED`, per-dispatcher EP, per-module layout."""
    return ([parts.fwd_s, parts.dgrad_s, parts.wgrad_s, parts.tp_raw_s, parts.cp_s, cp_bwd_exposed_s(parts), parts.dense_params,
             parts.expert_params, parts.alltoall_sort_fwd_s, parts.alltoall_sort_bwd_s, parts.expert_fwd_s, parts.expert_dgrad_s,
             parts.expert_wgrad_s, parts.host_wait_fwd_s, parts.host_wait_bwd_s]
            + [parts.ep_raw_by_dispatcher_s.get(d, 0.0) for d in DISPATCHERS] + [parts.fwd_by_module_s.get(m, 0.0) for m in RECOMPUTE_MODULE_COLS])
