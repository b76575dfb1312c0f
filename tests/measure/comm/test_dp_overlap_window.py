"""Data-parallel traffic hides only behind one micro-batch: Megatron-LM reduces gradients in the last micro-batch's
backward (schedules.py runs the others inside `no_sync_func()`) and, with overlap_param_gather, waits on the
parameter all-gather in the first micro-batch's forward pre-hooks (measure/comm/data_parallel.py)."""
import pytest

from bench.runs import load_all
from constraints.models.load import load_model
from constraints.spec import DataParallelSharding, JobSpec, Placement, Precision, Recipe
from hardware.profile import load_profile
from measure.comm import collectives as col
from measure.comm.data_parallel import exposed_dp_s, hidden_behind
from measure.comm.topology import recipe_groups
from measure.projection.project import project


def test_overlapped_collective_shows_what_exceeds_its_window():
    # 1.5 s of traffic behind a 0.4 s backward: 1.1 s shows; behind a 20 s backward only the 10 % floor
    assert hidden_behind(1.5, 0.4, 0.1, True) == pytest.approx(1.1)
    assert hidden_behind(1.5, 20.0, 0.1, True) == pytest.approx(0.15)
    assert hidden_behind(1.5, 20.0, 0.1, False) == pytest.approx(1.5)


def test_each_sharding_pays_its_passes_behind_their_windows():
    one, ar, fwd, bwd, frac = 1.0, 1.8, 0.3, 0.7, 0.1
    # distributed optimizer: reduce-scatter behind the last backward, all-gather behind the first forward
    assert exposed_dp_s(True, False, one, ar, 4, fwd, bwd, frac, True, True) == pytest.approx((1.0 - 0.7) + (1.0 - 0.3))
    # without overlap_param_gather the all-gather waits in full (it runs after the optimizer step)
    assert exposed_dp_s(True, False, one, ar, 4, fwd, bwd, frac, True, False) == pytest.approx(0.3 + 1.0)
    # DDP: one all-reduce behind the last backward
    assert exposed_dp_s(False, False, one, ar, 4, fwd, bwd, frac, True, True) == pytest.approx(1.8 - 0.7)
    # FSDP: three passes per micro-batch at the calibrated share (no window: its pass count is the stack's setting)
    assert exposed_dp_s(True, True, one, ar, 4, fwd, bwd, frac, True, True) == pytest.approx(3 * 4 * 1.0 * 0.1)
    assert exposed_dp_s(True, True, one, ar, 4, fwd, bwd, frac, False, False) == pytest.approx(3 * 4 * 1.0)


def test_gpt_oss_experts_over_eight_b200_nodes_show_what_one_micro_batch_cannot_hide():
    """GPT-OSS-120B at EP 8 on 64 B200 (Megatron-Bridge 26.04 row; HF config: hidden 2880, 128 experts of width 2880
    with biases, 36 layers): each GPU holds 16 experts per layer, 36 x 16 x (2880 x 5760 + 5760 + 2880 x 2880 + 2880)
    = 14,337,699,840 params, whose bf16 gradients and params cross the 8-node expert-DP group on 400 Gb/s InfiniBand.
    With 5 micro-batches one micro-batch's forward + backward (step / 5 at PP 1) cannot hide a reduce-scatter and an
    all-gather of them, so the step shows at least the difference, well above the calibrated 10 % share."""
    case = next(c for c in load_all()[0] if c.id == "MBR-141")
    prof = load_profile(case.hardware)
    proj = project(case.model, case.job, case.recipe, case.placement, prof, **case.run_options())
    groups = recipe_groups(case.recipe, prof, case.placement)
    assert groups.edp.size == 8 and groups.edp.num_domains == 8
    expert_params = 36 * 16 * (2880 * 5760 + 5760 + 2880 * 2880 + 2880)
    assert expert_params == 14_337_699_840
    one_pass_s = col.reduce_scatter_s(2 * expert_params, groups.edp, prof)
    b = proj.breakdown
    step_s = proj.iteration_time_s - b.dp_comm - b.optimizer
    assert b.dp_comm >= 2 * one_pass_s - step_s / 5
    assert b.dp_comm > 2 * prof.calibration.exposed_comm_fraction * 2 * one_pass_s


def test_small_dense_step_keeps_the_calibrated_share():
    """Llama-3.1-8B on one H100 node, 8 micro-batches of 8k tokens: the bf16 reduce-scatter and all-gather of its
    8.03 B params over NVLink (tens of ms) fit a micro-batch's forward and backward, so only the calibrated share of
    the two passes shows."""
    model, prof = load_model("Llama-3.1-8B"), load_profile("h100-sxm-80gb")
    place = Placement(hardware="h100-sxm-80gb", num_nodes=1, gpus_per_node=8)
    job = JobSpec(seq_length=8192, global_batch_size=64, precision=Precision.bf16)
    recipe = Recipe(tp=1, dp_sharding=DataParallelSharding.distributed_optimizer)
    proj = project(model, job, recipe, place, prof)
    no_window = project(model, job, recipe.model_copy(update={"overlap_grad_reduce": False, "overlap_param_gather": False}),
                        place, prof)
    assert proj.breakdown.dp_comm == pytest.approx(prof.calibration.exposed_comm_fraction * no_window.breakdown.dp_comm,
                                                   rel=1e-9)
