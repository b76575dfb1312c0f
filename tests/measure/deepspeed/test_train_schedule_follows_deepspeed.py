"""DeepSpeed's TrainSchedule step grid as microsoft/DeepSpeed deepspeed/runtime/pipe/schedule.py @9b70ce56e writes it,
and what its blocking exchanges cost (measure/deepspeed/train_schedule.py)."""
import pytest

from measure.deepspeed.train_schedule import Exchange, micro_batch_at, train_schedule_s


def _deepspeed_step_to_micro_batch(step_id: int, stage_id: int, stages: int) -> tuple[int, bool]:
    """TrainSchedule._step_to_micro_batch and its four helpers, transcribed from schedule.py @9b70ce56e."""
    even_step, even_stage = step_id % 2 == 0, stage_id % 2 == 0
    if even_step and even_stage:
        return int(step_id // 2 - stage_id // 2), True
    if not even_step and not even_stage:
        return int((step_id - 1) // 2 - stage_id // 2), True
    if even_step and not even_stage:
        return int(step_id // 2 - stages + (stage_id + 1) // 2), False
    return int(((step_id - 1) // 2) - stages + 1 + stage_id // 2), False


@pytest.mark.parametrize("stages, micro_batches", [(2, 1), (4, 8), (5, 3), (12, 128)])
def test_the_grid_is_deepspeeds(stages, micro_batches):
    for step in range(2 * (micro_batches + stages - 1)):
        for stage in range(stages):
            assert micro_batch_at(step, stage, stages) == _deepspeed_step_to_micro_batch(step, stage, stages)


@pytest.mark.parametrize("stages, micro_batches", [(4, 8), (35, 240), (12, 128), (3, 2)])
def test_without_transfer_time_it_finishes_as_1f1b(stages, micro_batches):
    # Narayanan et al. 2021 (arXiv 2104.04473) sec. 2.2.1: 1F1B takes (m + p - 1)(t_f + t_b)
    assert train_schedule_s([1.0] * stages, [3.0] * stages, micro_batches, Exchange(0.0, 0.0)) == \
        pytest.approx((micro_batches + stages - 1) * 4.0)


def test_the_slowest_stage_sets_the_pace():
    # the last stage's backward 3.5 instead of 3: m (F + B_slow) + (p - 1)(F + B) = 8 * 4.5 + 3 * 4
    assert train_schedule_s([1.0] * 4, [3.0, 3.0, 3.0, 3.5], 8, Exchange(0.0, 0.0)) == pytest.approx(48.0)


def test_each_exchange_is_in_series_with_compute():
    # 2 stages, 1 micro-batch: F on stage 0, activation sent, F and B on stage 1, gradient sent back, B on stage 0
    assert train_schedule_s([1.0, 1.0], [2.0, 2.0], 1, Exchange(activation_s=0.5, gradient_s=0.25)) == pytest.approx(6.75)


def test_exchanges_cost_more_than_megatrons_one_send_per_boundary():
    base = train_schedule_s([1.0] * 4, [3.0] * 4, 8, Exchange(0.0, 0.0))
    slower = train_schedule_s([1.0] * 4, [3.0] * 4, 8, Exchange(0.05, 0.05))
    # every one of the 2 (m + p - 1) = 22 steps of a middle stage opens with an activation and a gradient transfer
    # (warm-up and drain steps with one), so the step grows by more than one transfer per micro-batch
    assert slower - base > 8 * 0.05
    assert slower - base < 22 * 0.1


def test_bad_input_is_refused():
    with pytest.raises(ValueError):
        train_schedule_s([1.0], [1.0, 2.0], 4, Exchange(0.0, 0.0))
