"""DeepSpeed's pipeline `TrainSchedule`: 1F1B on a global step grid, each step opened by a blocking exchange.

Why its own simulator and not measure/pipeline/simulator.py: DeepSpeed does not issue a stage's work as Megatron's
1F1B does. `TrainSchedule.steps` (microsoft/DeepSpeed deepspeed/runtime/pipe/schedule.py @9b70ce56e) runs
2 (m + p - 1) steps on every stage; in each a stage either runs a forward or a backward (or idles), alternating with
the stage's parity (`_step_to_micro_batch`), so that stage s runs the forward of micro-batch k at step 2k + s and its
backward at step 2k + 2p - 1 - s. A step opens with the stage's transfers, all blocking (pipe/p2p.py `send` /
`recv` assert `async_op == False`), and with one neighbour only: a forward step sends the gradient of the previous
backward to stage s-1 and receives this forward's activation from it (`SendGrad`, `RecvActivation`); a backward step
receives the gradient from stage s+1 and sends it the previous forward's activation (`RecvGrad`, `SendActivation`).
Each exchange therefore starts when both stages have finished their previous step, and its transfers run one after
the other, never behind compute. With no transfer time the grid finishes exactly when Megatron's 1F1B does,
(m + p - 1)(F + B) for equal stages (tests/measure/deepspeed/test_train_schedule_follows_deepspeed.py); what it adds
is every exchange on the critical path, in series.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Exchange:
    """Seconds of one stage-to-stage tensor: the activation sent forward and the gradient sent back, each with what
    the receiver does before it can use it (measure/deepspeed/pipe_exchange.py)."""

    activation_s: float
    gradient_s: float


def micro_batch_at(step: int, stage: int, stages: int) -> tuple[int, bool]:
    """(micro-batch, is_forward) of `stage` at `step` (TrainSchedule._step_to_micro_batch; the micro-batch may be
    out of range: an idle step)."""
    forward = (step - stage) % 2 == 0
    k = (step - stage) // 2 if forward else (step - (2 * stages - 1 - stage)) // 2
    return k, forward


def train_schedule_s(forward_s: list[float], backward_s: list[float], micro_batches: int, exchange: Exchange) -> float:
    """Seconds until the last stage finishes TrainSchedule's last step. `forward_s` / `backward_s`: one micro-batch's
    forward and backward (recompute included) on each stage, first to last."""
    p, m = len(forward_s), micro_batches
    if p != len(backward_s) or p == 0 or m < 1:
        raise ValueError("forward_s and backward_s need one entry per stage, micro_batches >= 1")
    steps = 2 * (m + p - 1)
    done = [0.0] * p  # end of each stage's previous step
    for t in range(steps):
        nxt = list(done)
        for s in range(p):
            k, forward = micro_batch_at(t, s, p)
            prev_k, _ = micro_batch_at(t - 1, s, p)
            valid, prev_valid = 0 <= k < m, 0 <= prev_k < m
            neighbour = s - 1 if forward else s + 1
            start, moved = done[s], 0.0
            if 0 <= neighbour < p and (valid or prev_valid):
                # forward step: SendGrad(prev) then RecvActivation(curr); backward: RecvGrad(curr) then SendActivation(prev).
                # A transfer is a rendezvous: it starts when both stages reach it, whatever its length
                moved = (exchange.gradient_s * prev_valid + exchange.activation_s * valid) if forward \
                    else (exchange.gradient_s * valid + exchange.activation_s * prev_valid)
                start = max(start, done[neighbour])
            work = (forward_s[s] if forward else backward_s[s]) if valid else 0.0
            nxt[s] = start + moved + work
        done = nxt
    return max(done)
