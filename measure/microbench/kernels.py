"""torch microbenchmarks: one runnable kernel per (phase, OpKind) at the op's per-rank shape.

Why these particular kernels: each stands for what Megatron-LM core runs for that op, in eager torch
so it works on CPU, CUDA and ROCm alike — nn.Linear-style GEMMs with the real operand layouts of the
forward (X W^T), dgrad (dY W) and wgrad (dY^T X); torch._grouped_mm for MoE experts (bmm when it is
unavailable); SDPA causal with GQA for core attention (flash on GPUs); fused norms; Adam fused /
foreach over fp32 master params. Element-wise activations run unfused in eager (a few kernels where
Megatron uses one fused kernel), so they are an upper bound.

Dtypes: bf16 (fp32 on a CPU that cannot run bf16), fp16, and fp8 GEMMs through torch._scaled_mm
only on CUDA sm89+; anything else falls back to bf16. The dtype that actually ran is recorded.
Keys are `measure.kernels.layer_ops.PhaseOp.key`: `<phase>/<Op.key>`. torch is imported inside functions.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Callable, Optional

from measure.kernels.cost_table import Entry
from measure.kernels.ops import Op, OpKind
from measure.microbench.timing import backward_call, time_call

PHASES = ("fwd", "bwd_dgrad", "bwd_wgrad", "optimizer")


class UnsupportedOp(ValueError):
    """No benchmark exists for this phase of this op kind."""


def split_key(key: str) -> tuple[str, Op]:
    """`bwd_wgrad/gemm:64x32x16:bf16` -> ("bwd_wgrad", Op(gemm, (64, 32, 16), "bf16"))."""
    phase, _, op_key = key.partition("/")
    if phase not in PHASES or not op_key:
        raise UnsupportedOp(f"cost-table key {key!r}: expected <phase>/<op key> with phase in {', '.join(PHASES)}")
    return phase, Op.from_key(op_key)


def op_num_elements(op: Op) -> int:
    """Largest tensor the kernel touches, in elements (for attention: the s_q x s_kv score matrix it
    computes, whether or not it is materialised) — what `--max-elements` compares against."""
    s = op.shape
    if op.kind == OpKind.gemm:
        m, n, k = s
        return max(m * k, k * n, m * n)
    if op.kind == OpKind.grouped_gemm:
        g, m, n, k = s
        return g * max(m * k, k * n, m * n)
    if op.kind in (OpKind.attention_fwd, OpKind.attention_bwd):
        b, h, kvh, s_q, s_kv, d, _ = s
        return max(b * h * s_q * s_kv, b * h * s_q * d, b * kvh * s_kv * d)
    if op.kind == OpKind.swiglu:
        return 2 * s[0] * s[1]
    return math.prod(s)


@dataclass
class Benchmark:
    """A prepared kernel: `fn()` runs it once; `setup()` (untimed) runs before each call if set."""

    fn: Callable[[], object]
    dtype_used: str
    impl: str
    setup: Optional[Callable[[], object]] = None


_TORCH_DTYPES = {"bf16": "bfloat16", "fp16": "float16", "fp32": "float32"}


@lru_cache(maxsize=None)
def _dtype_runs(dtype_name: str, device_str: str) -> bool:
    """Whether a tiny matmul and norm run in this dtype on this device (old CPUs may lack bf16/fp16)."""
    import torch

    dt = getattr(torch, dtype_name)
    try:
        x = torch.ones(4, 4, dtype=dt, device=device_str)
        (x @ x).sum().item()
        torch.nn.functional.layer_norm(x, (4,)).sum().item()
        return True
    except (RuntimeError, TypeError):
        return False


def resolve_dtype(op_dtype: str, dev) -> tuple[object, str]:
    """torch dtype and its name for a non-fp8 kernel: fp8 means bf16 outside GEMMs; unsupported -> fp32."""
    import torch

    name = "bf16" if op_dtype == "fp8" else op_dtype
    if name not in _TORCH_DTYPES:
        raise UnsupportedOp(f"dtype {op_dtype!r}: use bf16, fp16, fp8 or fp32")
    if name != "fp32" and not _dtype_runs(_TORCH_DTYPES[name], str(dev)):
        name = "fp32"
    return getattr(torch, _TORCH_DTYPES[name]), name


def fp8_supported(dev) -> bool:
    """FP8 tensor cores: NVIDIA sm89 (Ada) and newer; ROCm and CPU are left to bf16 here."""
    import torch

    if dev.type != "cuda" or torch.version.hip is not None or not hasattr(torch, "_scaled_mm"):
        return False
    return torch.cuda.get_device_capability(dev) >= (8, 9)


def _gemm_operands(phase: str, m: int, n: int, k: int, dt, dev, batch: tuple[int, ...] = ()):
    """Operands of C[m,n] = A[m,k] B[k,n] laid out as nn.Linear's autograd has them:
    fwd X[m,k] @ W[n,k]^T, dgrad dY[m,k] @ W[k,n], wgrad (X[k,m])^T @ dY[k,n]."""
    import torch

    def rand(*shape):
        return torch.randn(*batch, *shape, dtype=dt, device=dev)

    if phase == "fwd":
        return rand(m, k), rand(n, k).transpose(-1, -2)
    if phase == "bwd_dgrad":
        return rand(m, k), rand(k, n)
    if phase == "bwd_wgrad":
        return rand(k, m).transpose(-1, -2), rand(k, n)
    raise UnsupportedOp(f"gemm has no {phase} kernel; use fwd, bwd_dgrad or bwd_wgrad")


def _fp8_gemm(m: int, n: int, k: int, dev) -> Optional[Benchmark]:
    """torch._scaled_mm wants A row-major and B column-major (cuBLASLt FP8 is TN only); None if it refuses."""
    import torch

    try:
        a = torch.randn(m, k, device=dev).to(torch.float8_e4m3fn)
        b = torch.randn(n, k, device=dev).to(torch.float8_e4m3fn).t()
        one = torch.ones((), dtype=torch.float32, device=dev)

        def fn():
            return torch._scaled_mm(a, b, scale_a=one, scale_b=one, out_dtype=torch.bfloat16)

        fn()
        return Benchmark(fn, "fp8", "torch._scaled_mm")
    except (RuntimeError, TypeError, AttributeError):
        return None


def _gemm(phase: str, op: Op, dev) -> Benchmark:
    import torch

    m, n, k = op.shape
    if op.dtype == "fp8" and fp8_supported(dev):
        bench = _fp8_gemm(m, n, k, dev)
        if bench is not None:
            return bench
    dt, used = resolve_dtype(op.dtype, dev)
    a, b = _gemm_operands(phase, m, n, k, dt, dev)
    return Benchmark(lambda: torch.mm(a, b), used, "torch.mm")


def _grouped_gemm(phase: str, op: Op, dev) -> Benchmark:
    import torch

    g, m, n, k = op.shape
    dt, used = resolve_dtype(op.dtype, dev)
    a, b = _gemm_operands(phase, m, n, k, dt, dev, batch=(g,))
    grouped = getattr(torch, "_grouped_mm", None)
    if grouped is not None:
        for x, y in ((a, b), (a.contiguous(), b.transpose(-1, -2).contiguous().transpose(-1, -2))):
            try:
                grouped(x, y)
                return Benchmark(lambda x=x, y=y: grouped(x, y), used, "torch._grouped_mm")
            except (RuntimeError, TypeError, ValueError):
                continue
    return Benchmark(lambda: torch.bmm(a, b), used, "torch.bmm")


def _attention(phase: str, op: Op, dev) -> Benchmark:
    import torch
    import torch.nn.functional as F


    b, h, kvh, s_q, s_kv, d, causal = op.shape
    dt, used = resolve_dtype(op.dtype, dev)
    want_bwd = op.kind == OpKind.attention_bwd
    if (phase == "fwd") == want_bwd or phase not in ("fwd", "bwd_dgrad"):
        raise UnsupportedOp(f"{op.kind.value} is measured in phase {'bwd_dgrad' if want_bwd else 'fwd'}, not {phase}")
    q = torch.randn(b, h, s_q, d, dtype=dt, device=dev, requires_grad=want_bwd)
    k = torch.randn(b, kvh, s_kv, d, dtype=dt, device=dev, requires_grad=want_bwd)
    v = torch.randn(b, kvh, s_kv, d, dtype=dt, device=dev, requires_grad=want_bwd)

    def fwd():
        return F.scaled_dot_product_attention(q, k, v, is_causal=bool(causal), enable_gqa=h != kvh)

    return Benchmark(backward_call(fwd, (q, k, v)) if want_bwd else fwd, used, "sdpa")


def _pointwise_forward(op: Op, dev, dt):
    """(forward callable, tensors the backward differentiates w.r.t.) for bytes-bound kinds."""
    import torch
    import torch.nn.functional as F

    def rand(*shape, grad=True):
        return torch.randn(*shape, dtype=dt, device=dev, requires_grad=grad)

    kind, s = op.kind, op.shape
    if kind == OpKind.rmsnorm:
        x, w = rand(*s), rand(s[1])
        return (lambda: F.rms_norm(x, (s[1],), w, 1e-5)), (x, w)
    if kind == OpKind.layernorm:
        x, w, bias = rand(*s), rand(s[1]), rand(s[1])
        return (lambda: F.layer_norm(x, (s[1],), w, bias, 1e-5)), (x, w, bias)
    if kind == OpKind.swiglu:
        x = rand(s[0], 2 * s[1])

        def swiglu():
            gate, up = x.chunk(2, dim=-1)
            return F.silu(gate) * up

        return swiglu, (x,)
    if kind == OpKind.gelu:
        x = rand(*s)
        return (lambda: F.gelu(x, approximate="tanh")), (x,)
    if kind == OpKind.squared_relu:
        x = rand(*s)
        return (lambda: torch.square(F.relu(x))), (x,)
    if kind in (OpKind.elementwise, OpKind.ssd_scan):  # the scan's stand-in moves its bytes (mamba_ssd.scan_ops)
        x, y = rand(*s), rand(*s)
        return (lambda: x + y), (x, y)
    if kind == OpKind.softmax_cross_entropy:
        logits = rand(*s)
        target = torch.randint(0, s[1], (s[0],), device=dev)
        return (lambda: F.cross_entropy(logits, target)), (logits,)
    if kind == OpKind.embedding:
        # the shape carries no vocabulary; a table of `tokens` rows keeps the gather and the
        # scatter-add of the backward at the op's bytes (the vocab-sized zeroing is not included)
        tokens, hidden = s
        table = rand(tokens, hidden)
        ids = torch.randint(0, tokens, (tokens,), device=dev)
        return (lambda: F.embedding(ids, table)), (table,)
    raise UnsupportedOp(f"no pointwise benchmark for {kind.value}")


def _pointwise(phase: str, op: Op, dev) -> Benchmark:
    dt, used = resolve_dtype(op.dtype, dev)
    fwd, wrt = _pointwise_forward(op, dev, dt)
    if phase == "fwd":
        return Benchmark(fwd, used, "eager")
    if op.kind in (OpKind.elementwise, OpKind.ssd_scan) and phase == "bwd_dgrad":
        return Benchmark(fwd, used, "eager")  # residual/permute backward is the same add/gather again
    backward_phase = "bwd_wgrad" if op.kind == OpKind.embedding else "bwd_dgrad"
    if phase != backward_phase:
        raise UnsupportedOp(f"{op.kind.value} is measured in phases fwd and {backward_phase}, not {phase}")
    return Benchmark(backward_call(fwd, wrt), used, "autograd")


def _optimizer_step(phase: str, op: Op, dev) -> Benchmark:
    """One Adam step over `num_params` fp32 master params (Megatron keeps fp32 master weights)."""
    import torch

    if phase != "optimizer":
        raise UnsupportedOp(f"optimizer_step is measured in phase optimizer, not {phase}")
    (n,) = op.shape
    param = torch.nn.Parameter(torch.randn(n, dtype=torch.float32, device=dev))
    param.grad = torch.randn_like(param)
    for impl, kwargs in (("adam-fused", {"fused": True}), ("adam-foreach", {"foreach": True})):
        try:
            opt = torch.optim.Adam([param], lr=1e-4, **kwargs)
            opt.step()
            return Benchmark(opt.step, "fp32", impl)
        except (RuntimeError, TypeError, ValueError):
            continue
    opt = torch.optim.Adam([param], lr=1e-4)
    return Benchmark(opt.step, "fp32", "adam")


_BUILDERS = {
    OpKind.gemm: _gemm,
    OpKind.grouped_gemm: _grouped_gemm,
    OpKind.attention_fwd: _attention,
    OpKind.attention_bwd: _attention,
    OpKind.optimizer_step: _optimizer_step,
}


def build_benchmark(phase: str, op: Op, dev) -> Benchmark:
    """The kernel for `op` in `phase` on torch device `dev`, with its inputs allocated."""
    builder = _BUILDERS.get(op.kind, _pointwise)
    return builder(phase, op, dev)


def measure_key(key: str, dev, warmup: int = 3, reps: int = 10, budget_s: Optional[float] = None) -> Entry:
    """Build and time the kernel a cost-table key names; returns the table entry."""
    phase, op = split_key(key)
    bench = build_benchmark(phase, op, dev)
    timing = time_call(bench.fn, dev.type, warmup=warmup, reps=reps, setup=bench.setup, budget_s=budget_s)
    return Entry(median_s=max(timing.median_s, 1e-9), num_reps=timing.num_reps, spread_s=timing.spread_s,
                 dtype_used=bench.dtype_used, impl=bench.impl)
