"""The Mamba-2 mixer's conv + SSD scan priced kernel by kernel (measure/kernels/mamba_ssd.py), against byte counts worked out by
hand from mamba_ssm's tensor shapes (state-spaces/mamba @ e9594ce1, mamba_ssm/ops/triton/ssd_combined.py and the
ssd_*.py kernels it calls) for Nemotron-H-8B at TP 2, MBS 1, sequence 8192.

Per rank: heads Hl = 128/2 = 64, head dim P = 64, groups Gl = 8/2 = 4, state N = 128, chunk Q = 128, c = 64 chunks,
T = 8192 tokens, conv channels 64*64 + 2*4*128 = 5120, kernel K = 4, zxBCdt width 2*4096 + 2*4*128 + 64 = 9280
(a multiple of 8: ensure_stride copies nothing). Tensor bytes:
  x  (x, z, out, out_x, dout, dx, dz; bf16)  2*8192*64*64      =  67,108,864
  bc (B or C; bf16)                          2*8192*4*128      =   8,388,608   bc32 (fp32) 16,777,216
  dt (bf16 slice of zxBCdt)                  2*8192*64         =   1,048,576
  ht (dt_out, dA_cumsum, ddA, ddt; fp32)     4*64*64*128       =   2,097,152
  st32 (chunk states fp32)                   4*64*64*64*128    = 134,217,728   st16 (bf16) 67,108,864
  final states (fp32)                        4*64*64*128       =   2,097,152
  chunk_last (dA_cumsum[..., -1]; fp32)      4*64*64           =      16,384
  cb (C^T B per chunk and group; fp32)       4*64*4*128*128    =  16,777,216
  conv (xBC / xBC_conv / their gradients)    2*8192*5120       =  83,886,080   conv weight + bias 2*5120*5 = 51,200
  dD partials (fp32)                         4*ceil(128/32)*64*64 =   65,536
Head splits of the dB / dC / dCB kernels: 16 heads per group, ceil(64*64 / 132) = 32 >= 16 heads per program: 1 split.

Forward, read + write per kernel:
  causal_conv1d_fwd   conv + weights + conv                               = 167,823,360
  _chunk_cumsum_fwd   dt + 2 ht                                           =   5,242,880
  _chunk_state_fwd    x + bc + 2 ht + st32                                = 213,909,504
  _state_passing_fwd  st32 + chunk_last + st16 (bf16 out) + final         = 203,440,128
  _bmm_chunk_fwd      2 bc + cb                                           =  33,554,432
  _chunk_scan_fwd     cb + x + z + 2 ht + C + st16 + out + out_x          = 364,904,448
Backward (in _mamba_chunk_scan_combined_bwd's order) — the Triton kernels:
  _state_passing_fwd (fp32 out)   2 st32 + chunk_last + final              = 270,548,992
  _chunk_scan_bwd_dz              4 x + 2 x + dD                           = 402,718,720
  _chunk_scan_bwd_dstates         C + ht + x + st32                        = 211,812,352
  _state_passing_bwd              2 st32 + chunk_last + 2 st16 + 4 chunk_last (P*N/2048 partials) = 402,735,104
  _chunk_scan_chunk_state_bwd_dx  x + CB + dout + 2 ht + B + st16 + dx + ddt + dD = 299,958,272
  _chunk_state_bwd_db             x + st16 + B + 2 ht + dB32 + ht          = 165,675,008
  _chunk_scan_bwd_dC              x + st16 + C + ht + dC32 + ht            = 163,577,856
  _chunk_scan_bwd_dcb             2 x + 2 ht + cb                          = 155,189,248
  _bmm_chunk_bwd (each of 2)      bc + cb + bc32 + bc                      =  50,331,648
  _chunk_scan_bwd_ddAcs_stable    2 x + 2 ht + cb + ht                     = 157,286,400
  _chunk_cumsum_bwd               2 ht + dt + dt                           =   6,291,456
  causal_conv1d_bwd               3 conv + weights + fp32 weight grads     = 251,811,840
The old single op: forward 2*T*(9280 + 4096) + 2 * 4*64*64*64*128 = 487,587,840 bytes, backward 2.5x that.
"""
import pytest

from constraints.models.load import load_model
from constraints.spec import JobSpec, Recipe
from hardware.profile import load_profile
from measure.kernels.common import Phase
from measure.kernels.mamba_ops import mamba_ops
from measure.kernels.mamba_ssd import backward_kernels, forward_kernels, scan_ops, scan_shape
from measure.kernels.ops import OpKind
from measure.kernels.roofline import curve_efficiency, peak_flops, roofline_time_s

NH8 = "Nemotron-H-8B-Base-8K"
JOB = JobSpec(seq_length=8192, global_batch_size=64)


def _shape(tp: int = 2, cp: int = 1, mbs: int = 1):
    return scan_shape(load_model(NH8), JOB, Recipe(tp=tp, cp=cp, mbs=mbs, sequence_parallel=tp > 1))


def test_forward_kernel_bytes_match_the_hand_count():
    got = [(k.name, k.bytes_moved) for k in forward_kernels(_shape())]
    assert got == [("causal_conv1d_fwd", 167_823_360), ("_chunk_cumsum_fwd", 5_242_880),
                   ("_chunk_state_fwd", 213_909_504), ("_state_passing_fwd", 203_440_128),
                   ("_bmm_chunk_fwd", 33_554_432), ("_chunk_scan_fwd", 364_904_448)]


def test_backward_triton_and_conv_kernel_bytes_match_the_hand_count():
    ks = backward_kernels(_shape())
    by_name = {}
    for k in ks:
        by_name.setdefault(k.name, []).append(k.bytes_moved)
    assert by_name["_state_passing_fwd"] == [270_548_992]  # the recompute keeps fp32 states
    assert by_name["_chunk_scan_bwd_dz"] == [402_718_720]
    assert by_name["_chunk_scan_bwd_dstates"] == [211_812_352]
    assert by_name["_state_passing_bwd"] == [402_735_104]
    assert by_name["_chunk_scan_chunk_state_bwd_dx"] == [299_958_272]
    assert by_name["_chunk_state_bwd_db"] == [165_675_008]
    assert by_name["_chunk_scan_bwd_dC"] == [163_577_856]
    assert by_name["_chunk_scan_bwd_dcb"] == [155_189_248]
    assert by_name["_bmm_chunk_bwd dB"] == by_name["_bmm_chunk_bwd dC"] == [50_331_648]
    assert by_name["_chunk_scan_bwd_ddAcs_stable"] == [157_286_400]
    assert by_name["_chunk_cumsum_bwd"] == [6_291_456]
    assert by_name["causal_conv1d_bwd"] == [251_811_840]
    # the conv and the chunk states are recomputed: the forward's conv, cumsum, C^T B and chunk-state kernels again
    assert by_name["causal_conv1d_fwd"] == [167_823_360] and by_name["_chunk_state_fwd"] == [213_909_504]
    assert ks[0].name == "causal_conv1d_fwd" and ks[-1].name == "causal_conv1d_bwd"


def test_totals_exceed_the_old_single_op_and_halve_with_tp():
    old_fwd = 2 * 8192 * (9280 + 4096) + 2 * 4 * 64 * 64 * 64 * 128
    assert old_fwd == 487_587_840
    tp2 = _shape()
    fwd = sum(k.bytes_moved for k in forward_kernels(tp2))
    bwd = sum(k.bytes_moved for k in backward_kernels(tp2))
    assert fwd == 988_874_752 and fwd > 2 * old_fwd
    assert bwd > 2.5 * 2.5 * old_fwd
    # every tensor is per head or per group, so TP 1 moves twice TP 2's bytes (1 head split at both)
    tp1 = _shape(tp=1)
    assert sum(k.bytes_moved for k in forward_kernels(tp1) + backward_kernels(tp1)) == 2 * (fwd + bwd)
    # CP splits heads the same way inside the scan (MambaContextParallel), sequences stay whole
    assert _shape(tp=1, cp=2) == tp2


def test_one_host_op_per_autograd_call_and_mamba_ops_carry_the_kernels():
    ops = scan_ops(_shape())
    for phase in (Phase.fwd, Phase.bwd_dgrad):
        phase_ops = [p for p in ops if p.phase == phase]
        assert [p.host_op for p in phase_ops] == [True] + [False] * (len(phase_ops) - 1)
    layer = mamba_ops(load_model(NH8), JOB, Recipe(tp=2, sequence_parallel=True))
    assert sum(p.bytes_moved for p in layer if not p.host_op) > 3e9
    # MBS 2 adds Megatron's two .contiguous() copies (zxBCdt in, y out) in the forward, and Transformer Engine's copy of
    # zxBCdt's permuted gradient in the backward (grad_output_preprocess): read + write of MBS x s x in_proj width / TP
    two = mamba_ops(load_model(NH8), JOB, Recipe(tp=2, mbs=2, sequence_parallel=True))
    assert len(two) == len(layer) + 3
    copies = [p for p in two if p.module == "mamba" and p.op.kind.value == "elementwise" and p.flops == 0.0]
    in_w = (2 * 8192 + 2 * 8 * 128 + 128) // 2  # Nemotron-H-8B: d_inner 8192, 8 groups of state 128, 128 heads, TP 2
    assert [(p.phase, p.bytes_moved) for p in copies] == [
        (Phase.fwd, 2 * 2 * 2 * 8192 * in_w), (Phase.bwd_dgrad, 2 * 2 * 2 * 8192 * in_w),
        (Phase.fwd, 2 * 2 * 2 * 8192 * 8192 // 2)]


def test_scan_kernels_sit_below_the_bf16_ridge_so_bytes_price_them():
    """Why measure.kernels.roofline may price them as memory-bound: on the H100 profile each kernel's FLOPs per byte is below
    the ridge at the GEMM efficiency its whole-kernel FLOPs would get."""
    prof = load_profile("h100-sxm-80gb")
    cal = prof.calibration
    bw = prof.hbm_bandwidth_gb_per_s * 1e9 * cal.memory_bound_efficiency
    for k in forward_kernels(_shape()) + backward_kernels(_shape()):
        if k.flops:
            compute_s = k.flops / (peak_flops(prof, "bf16") * curve_efficiency(cal.gemm_efficiency, k.flops))
            assert compute_s < k.bytes_moved / bw, k.name


@pytest.mark.parametrize("tp", [1, 2, 4, 8])
def test_head_splits_follow_the_sm_count_rule(tp):
    """nheads_per_program = max(min(ceil(b c Hl / 132), Hl/Gl), 1); splits = ceil((Hl/Gl) / nheads_per_program):
    Hl = 128/tp, 64 chunks, 16 heads per group: ceil(64*128/tp / 132) = 63, 32, 16, 8 -> splits 1, 1, 1, 2."""
    assert _shape(tp=tp).splits == {1: 1, 2: 1, 4: 1, 8: 2}[tp]


def test_scan_kernels_take_the_scan_bandwidth_and_other_bytes_bound_ops_the_elementwise_one():
    """The SSD kernels are OpKind.ssd_scan, priced at the calibration's `ssd_scan_memory_efficiency` (H100: 3,350 GB/s
    datasheet); without one they fall back to `memory_bound_efficiency`. The mixer's norm and residual stay elementwise."""
    prof = load_profile("h100-sxm-80gb")
    layer = mamba_ops(load_model(NH8), JOB, Recipe(tp=2, sequence_parallel=True))
    scan = [p for p in layer if p.op.kind == OpKind.ssd_scan]
    assert len(scan) == len(scan_ops(_shape())) and all(p.op.kind != OpKind.elementwise for p in scan_ops(_shape()))
    launch_s = prof.calibration.kernel_launch_us * 1e-6
    own = prof.model_copy(update={"calibration": prof.calibration.model_copy(update={"ssd_scan_memory_efficiency": 0.3})})
    k = scan[1]
    assert roofline_time_s(k, own) == pytest.approx(k.bytes_moved / (3350e9 * 0.3) + launch_s)
    unset = prof.model_copy(update={"calibration": prof.calibration.model_copy(update={"ssd_scan_memory_efficiency": None})})
    eff = prof.calibration.memory_bound_efficiency
    assert roofline_time_s(k, unset) == pytest.approx(k.bytes_moved / (3350e9 * eff) + launch_s)
    residual = [p for p in layer if p.module == "residual"][0]
    assert roofline_time_s(residual, own) == roofline_time_s(residual, unset)
