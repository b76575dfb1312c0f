"""The kernels of mamba_ssm's `mamba_split_conv1d_scan_combined` (the Mamba-2 mixer's conv + SSD scan in training),
one per kernel launch, with the bytes each moves through DRAM and the FLOPs it does, on one rank per micro-batch.

Why kernel by kernel: the scan is not one fused kernel. Its forward runs the causal conv and five Triton kernels, each
reading its inputs from and writing its outputs to DRAM (fp32 dt / dA_cumsum / chunk states / C^T B in between), and
its backward recomputes the conv and the chunk states and then runs a dozen kernels plus torch reductions. Priced as
one op that reads zxBCdt and writes y, the mixer moved ~4x too few bytes, which left hybrid models projected too fast.

Source (facts read, not code copied): state-spaces/mamba @ e9594ce1 (2026-07-23), mamba_ssm/ops/triton/
ssd_combined.py (MambaSplitConv1dScanCombinedFn.forward/backward, _mamba_chunk_scan_combined_fwd/_bwd,
_chunk_scan_chunk_state_bwd_dx), ssd_chunk_state.py, ssd_state_passing.py, ssd_bmm.py, ssd_chunk_scan.py; and how
Megatron-LM @ d98e8a64 calls it (megatron/core/ssm/mamba_mixer.py MambaMixer._ssm_training): rmsnorm_weight and
outproj_weight not passed (the mixer's own norm and out_proj run after it), z passed (so the scan writes the gated `out`
and the pre-gate `out_x`), D per head, chunk_size 128, state_dtype = params dtype (bf16), no seq_idx.

Per rank (MambaContextParallel splits heads over CP around the scan, megatron/core/ssm/mamba_context_parallel.py):
b = MBS sequences of the full length L, T = b L tokens, c = ceil(L / Q) chunks of Q = 128, heads Hl = H / (TP CP), head
dim P, groups Gl = max(1, G / (TP CP)), state N, conv channels Hl P + 2 Gl N, kernel K. Byte conventions:
- each tensor a kernel reads or writes counts once (compulsory traffic): B, C and the fp32 C^T B of a group are read by
  every head of the group, from L2 after the first, so they count once; a lower bound on DRAM traffic;
- (b, Hl, c, Q) per-head-token tensors (dt, dA_cumsum, their gradients) are fp32 and padded to whole chunks;
- kernels whose partial sums depend on an autotuned block size are counted at the largest configured block (fewest
  partials), again a lower bound.
FLOPs: tl.dot work per chunk and head (the intra-chunk C^T B-weighted product over a causal Q x Q mask counts half of
2 Q^2 P), plus the conv's 2K per output; elementwise exp/silu work is left out (the kernels are memory-bound: about
30-40 FLOPs per byte against a ridge of ~200-300 on H100/H200/B200, so the roofline prices them by bytes, as
measure.kernels.roofline does for every OpKind.elementwise op).
"""
from __future__ import annotations

from dataclasses import dataclass

from constraints.models.mamba import mamba_dims
from constraints.spec import JobSpec, ModelSpec, Recipe
from measure.kernels.common import Phase, PhaseOp
from measure.kernels.ops import Op, OpKind

# MambaMixer(chunk_size=128) (megatron/core/ssm/mamba_mixer.py __init__), passed as `chunk_size` to the scan
CHUNK_TOKENS = 128
# _chunk_state_bwd_db / _chunk_scan_bwd_dC / _chunk_scan_bwd_dcb split the heads of a group over programs when
# b c Hl is small against the SM count (nheads_per_program = max(min(ceil(b c Hl / SMs), Hl/Gl), 1)); 132 SMs is
# the H100 SXM5 / H200 count (NVIDIA H100 Tensor Core GPU Architecture whitepaper), the parts most runs use
SPLIT_SM_COUNT = 132
# largest autotuned blocks (fewest partial sums): _state_passing_bwd_kernel BLOCK_SIZE 2048,
# _chunk_scan_bwd_ddAcs_stable_kernel BLOCK_SIZE_M 128 (ssd_state_passing.py, ssd_chunk_scan.py autotune configs);
# _chunk_scan_bwd_dz and the dx kernel size their dD partials by BLOCK_SIZE_min 32 (allocated, ceil(Q / 32))
STATE_PASSING_BWD_BLOCK = 2048
DD_PARTIAL_BLOCK = 32
FP32, BF16 = 4, 2


@dataclass(frozen=True)
class ScanShape:
    """The scan's per-rank shape (module docstring)."""

    batch: int
    seqlen: int
    heads: int
    head_dim: int
    groups: int
    state: int
    conv_kernel: int
    in_proj_width: int  # zxBCdt channels on this rank (its row stride, which ensure_stride checks)
    chunk: int = CHUNK_TOKENS

    @property
    def chunks(self) -> int:
        return -(-self.seqlen // self.chunk)

    @property
    def tokens(self) -> int:
        return self.batch * self.seqlen

    @property
    def conv_channels(self) -> int:
        return self.heads * self.head_dim + 2 * self.groups * self.state

    @property
    def splits(self) -> int:
        """Head splits of the dB / dC / dC^TB kernels (see SPLIT_SM_COUNT)."""
        per_group = self.heads // self.groups
        per_program = max(min(-(-self.batch * self.chunks * self.heads // SPLIT_SM_COUNT), per_group), 1)
        return -(-per_group // per_program)


def scan_shape(model: ModelSpec, job: JobSpec, recipe: Recipe) -> ScanShape:
    d = mamba_dims(model)
    split = recipe.tp * recipe.cp
    heads, groups = d.heads // split, max(d.groups // split, 1)
    width = 2 * heads * d.head_dim + 2 * groups * d.state + heads
    return ScanShape(recipe.mbs, job.seq_length, heads, d.head_dim, groups, d.state, d.conv_kernel, width)


@dataclass(frozen=True)
class Kernel:
    """One launch: the mamba_ssm / torch call it is, bytes read and written, FLOPs."""

    name: str
    read_bytes: int
    write_bytes: int
    flops: int

    @property
    def bytes_moved(self) -> int:
        return self.read_bytes + self.write_bytes


@dataclass(frozen=True)
class _Sizes:
    """Bytes of the tensors the kernels pass around (names as in ssd_combined.py)."""

    x: int        # x, z, out, out_x, dout, dx, dz: (b, L, Hl, P) bf16
    bc: int       # one of B, C (bf16) or of their bf16 gradients: (b, L, Gl, N)
    bc32: int     # dB / dC reduced, fp32
    dt: int       # dt as sliced from zxBCdt, and ddt written back into dzxBCdt: (b, L, Hl) bf16
    ht: int       # dt_out, dA_cumsum, ddA, ddt: (b, Hl, c, Q) fp32
    st32: int     # chunk states fp32 (b, c, Hl, P, N)
    st16: int     # the same in bf16
    final: int    # final states fp32 (b, Hl, P, N)
    chunk_last: int  # dA_cumsum[..., -1] and ddA_chunk_cumsum: (b, Hl, c) fp32
    cb: int       # C^T B per chunk and group, fp32 (b, c, Gl, Q, Q)
    conv: int     # xBC in or out of the conv, or its gradient: (b, L, conv channels) bf16
    conv_w: int   # conv weight (channels, K) and bias, bf16
    dd: int       # dD partials, fp32 (ceil(Q / 32), b, c, Hl)


def _sizes(s: ScanShape) -> _Sizes:
    T, H, G, c = s.tokens, s.heads, s.groups, s.chunks
    bhc = s.batch * H * c
    return _Sizes(x=BF16 * T * H * s.head_dim, bc=BF16 * T * G * s.state, bc32=FP32 * T * G * s.state,
                  dt=BF16 * T * H, ht=FP32 * bhc * s.chunk, st32=FP32 * bhc * s.head_dim * s.state,
                  st16=BF16 * bhc * s.head_dim * s.state, final=FP32 * s.batch * H * s.head_dim * s.state,
                  chunk_last=FP32 * bhc, cb=FP32 * s.batch * c * G * s.chunk * s.chunk,
                  conv=BF16 * T * s.conv_channels, conv_w=BF16 * s.conv_channels * (s.conv_kernel + 1),
                  dd=FP32 * -(-s.chunk // DD_PARTIAL_BLOCK) * bhc)


def _flops(s: ScanShape) -> dict[str, int]:
    """tl.dot FLOPs per kernel family over all chunks and heads (module docstring)."""
    bc, H, G, P, N, Q = s.batch * s.chunks, s.heads, s.groups, s.head_dim, s.state, s.chunk
    return {"state": 2 * bc * Q * H * P * N,            # (P x Q) @ (Q x N) per chunk and head
            "causal": bc * H * Q * Q * P,               # causal half of (Q x Q) @ (Q x P) per chunk and head
            "cb": 2 * bc * G * Q * Q * N,               # (Q x N) @ (N x Q) per chunk and group
            "conv": 2 * s.conv_kernel * s.tokens * s.conv_channels}


def _conv_fwd(z: _Sizes, f: dict) -> Kernel:
    # causal_conv1d_fwd_function(xBC, weight, bias, silu): reads xBC (a channels-last view of zxBCdt), writes xBC_conv
    return Kernel("causal_conv1d_fwd", z.conv + z.conv_w, z.conv, f["conv"])


def _states_fwd(z: _Sizes, f: dict, s: ScanShape, out_bytes: int) -> list[Kernel]:
    """_chunk_cumsum_fwd, _chunk_state_fwd (fp32 states) and _state_passing_fwd (ssd_chunk_state.py,
    ssd_state_passing.py): the forward's, writing bf16 states (out_dtype = state_dtype), or the backward's recompute
    (no out_dtype: fp32, the input's)."""
    return [
        # reads dt (bf16 slice of zxBCdt), A, dt_bias; writes dt_out and dA_cumsum, fp32 (b, Hl, c, Q)
        Kernel("_chunk_cumsum_fwd", z.dt, 2 * z.ht, 0),
        # reads x, B, dt_out, dA_cumsum; writes states fp32 (b, c, Hl, P, N)
        Kernel("_chunk_state_fwd", z.x + z.bc + 2 * z.ht, z.st32, f["state"]),
        # reads the chunk states and dA_cumsum[..., -1]; writes the passed states and the fp32 final states
        Kernel("_state_passing_fwd", z.st32 + z.chunk_last, out_bytes + z.final, 2 * s.batch * s.chunks * s.heads * s.head_dim * s.state),
    ]


def _bmm_fwd(z: _Sizes, f: dict) -> Kernel:
    # _bmm_chunk_fwd(C, B, output_dtype=float32) (ssd_bmm.py): C^T B per chunk and group
    return Kernel("_bmm_chunk_fwd", 2 * z.bc, z.cb, f["cb"])


def _ensure_stride_copies(s: ScanShape, z: _Sizes, count: int) -> list[Kernel]:
    """ensure_stride (ssd_combined.py) copies xBC (or dxBC) when zxBCdt's row stride is not a multiple of 8."""
    return [Kernel("ensure_stride contiguous", z.conv, z.conv, 0)] * (count if s.in_proj_width % 8 else 0)


def forward_kernels(s: ScanShape) -> list[Kernel]:
    """MambaSplitConv1dScanCombinedFn.forward with z and without the fused norm / out_proj (Megatron's call)."""
    z, f = _sizes(s), _flops(s)
    ks = _ensure_stride_copies(s, z, 1) + [_conv_fwd(z, f)]
    ks += _states_fwd(z, f, s, z.st16)
    ks.append(_bmm_fwd(z, f))
    # _chunk_scan_fwd (ssd_chunk_scan.py): reads CB, x, dt_out, dA_cumsum, C, states, D, z; writes out and out_x
    ks.append(Kernel("_chunk_scan_fwd", z.cb + 2 * z.x + 2 * z.ht + z.bc + z.st16, 2 * z.x,
                     f["causal"] + f["state"]))
    return ks


def backward_kernels(s: ScanShape) -> list[Kernel]:
    """MambaSplitConv1dScanCombinedFn.backward (no fused norm / out_proj) and _mamba_chunk_scan_combined_bwd, in order."""
    z, f = _sizes(s), _flops(s)
    ns, small = s.splits, z.chunk_last
    ks = _ensure_stride_copies(s, z, 1) + [_conv_fwd(z, f), Kernel("dt.clone", z.dt, z.dt, 0)]
    ks.append(_states_fwd(z, f, s, z.st32)[0])
    ks.append(_bmm_fwd(z, f))
    ks += _states_fwd(z, f, s, z.st32)[1:]
    ks += [
        # reads dout, out_x, z, x, D; writes dz (into dzxBCdt), dout_x and dD partials; then dD's sum
        Kernel("_chunk_scan_bwd_dz", 4 * z.x, 2 * z.x + z.dd, 0),
        Kernel("dD.sum", z.dd, 0, 0),
        # reads C, dA_cumsum, dout_x; writes dstates in the states' dtype (fp32)
        Kernel("_chunk_scan_bwd_dstates", z.bc + z.ht + z.x, z.st32, f["state"]),
        # reads dstates and states (fp32), dA_cumsum[..., -1]; writes bf16 dstates, the states converted to bf16
        # and ddA_chunk_cumsum partials per block of P N; then their sum
        Kernel("_state_passing_bwd", 2 * z.st32 + small, 2 * z.st16 + small * _state_blocks(s), 0),
        Kernel("ddA_chunk_cumsum.sum", small * _state_blocks(s), small, 0),
        # reads x, CB, dout, dt, dA_cumsum, D, B, dstates; writes dx (into dxBC), ddt fp32, dD partials
        Kernel("_chunk_scan_chunk_state_bwd_dx", 2 * z.x + z.cb + 2 * z.ht + z.bc + z.st16, z.x + z.ht + z.dd,
               f["causal"] + f["state"]),
        Kernel("dD.sum", z.dd, 0, 0),
        # reads x, dstates, B, dt, dA_cumsum; writes dB fp32 per head split and ddA_next; dB.sum(2); cumsum(ddA_next)
        Kernel("_chunk_state_bwd_db", z.x + z.st16 + z.bc + 2 * z.ht, ns * z.bc32 + z.ht, f["state"]),
        Kernel("dB.sum", ns * z.bc32, z.bc32, 0),
        Kernel("ddA_next.cumsum", z.ht, z.ht, 0),
        # reads dout, states (bf16), C, dA_cumsum; writes dC fp32 per head split and ddA_cumsum_prev; dC.sum(2)
        Kernel("_chunk_scan_bwd_dC", z.x + z.st16 + z.bc + z.ht, ns * z.bc32 + z.ht, f["state"]),
        Kernel("dC.sum", ns * z.bc32, z.bc32, 0),
        # reads x, dout, dt, dA_cumsum; writes dCB fp32 per head split; dcb.sum(2)
        Kernel("_chunk_scan_bwd_dcb", 2 * z.x + 2 * z.ht, ns * z.cb, f["causal"]),
        Kernel("dcb.sum", ns * z.cb, z.cb, 0),
        # _bmm_chunk_bwd(C, dCB, residual=dB) and (B, dCB^T, residual=dC): read the bf16 operand, dCB and the fp32
        # residual; write the bf16 gradient into dxBC
        Kernel("_bmm_chunk_bwd dB", z.bc + z.cb + z.bc32, z.bc, f["cb"]),
        Kernel("_bmm_chunk_bwd dC", z.bc + z.cb + z.bc32, z.bc, f["cb"]),
        # ddA_cumsum_prev[..., -1] += ddA_chunk_cumsum; ddA_prev = flip(cumsum(flip(ddA_cumsum_prev)))
        Kernel("ddA_cumsum_prev[..., -1] +=", 2 * small, small, 0),
        Kernel("flip", z.ht, z.ht, 0), Kernel("cumsum", z.ht, z.ht, 0), Kernel("flip", z.ht, z.ht, 0),
        # reads x, dout, dt, dA_cumsum, CB; writes ddA partials per row block; their sum
        Kernel("_chunk_scan_bwd_ddAcs_stable", 2 * z.x + 2 * z.ht + z.cb, z.ht, f["causal"]),
        Kernel("ddA partials.sum", z.ht, z.ht, 0),
        # ddA += ddA_next + ddA_prev: two torch adds
        Kernel("ddA_next + ddA_prev", 2 * z.ht, z.ht, 0), Kernel("ddA +=", 2 * z.ht, z.ht, 0),
        # reads ddA, ddt (fp32), dt; writes ddt (bf16, into dzxBCdt), dA, ddt_bias
        Kernel("_chunk_cumsum_bwd", 2 * z.ht + z.dt, z.dt, 0),
    ]
    # causal_conv1d_bwd_function(xBC, weight, bias, dxBC, silu): reads xBC and the conv output's gradient, recomputes
    # the pre-activation, writes dxBC into dzxBCdt and the fp32 weight / bias gradients
    # (ensure_stride copies xBC again and dxBC_given, and dxBC_given.copy_ takes the result back, when the stride is off)
    ks += _ensure_stride_copies(s, z, 2)
    ks.append(Kernel("causal_conv1d_bwd", 2 * z.conv + z.conv_w, z.conv + 2 * z.conv_w, 3 * f["conv"]))
    ks += _ensure_stride_copies(s, z, 1)
    return ks


def _state_blocks(s: ScanShape) -> int:
    return -(-s.head_dim * s.state // STATE_PASSING_BWD_BLOCK)


def scan_ops(s: ScanShape, module: str = "mamba") -> list[PhaseOp]:
    """The kernels as PhaseOps (forward, then backward as dgrad). The host issues the autograd function once each way
    (the launches inside it are the function's own Python), so only its first kernel per phase is a host op.
    Each op is an OpKind.ssd_scan of bytes / 6 elements: the roofline prices it by its bytes at the calibration's
    `ssd_scan_memory_efficiency` (the Triton scan kernels' own achieved bandwidth, not the elementwise kernels'), and a
    measured stand-in (x + y over n bf16 elements moves 6n bytes, measure/microbench/kernels.py) moves its bytes."""
    ops = []
    for phase, kernels in ((Phase.fwd, forward_kernels(s)), (Phase.bwd_dgrad, backward_kernels(s))):
        for i, k in enumerate(kernels):
            op = Op(OpKind.ssd_scan, (max(-(-k.bytes_moved // 6), 1),), "bf16")
            ops.append(PhaseOp(op, phase, module, float(k.flops), float(k.bytes_moved), host_op=i == 0))
    return ops
