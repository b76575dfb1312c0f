"""The torch side of `measure` on CPU with tiny shapes: timing, every kernel, the CLI's resume, gpu_step."""
from __future__ import annotations

import importlib.util
import time

import pytest
from click.testing import CliRunner

torch = pytest.importorskip("torch")

import shardplan.cli.measure as measure_cli  # noqa: E402
from measure.kernels.cost_table import CostTable  # noqa: E402
from measure.kernels.fingerprint import DeviceUnavailable, device_fingerprint, resolve_device  # noqa: E402
from measure.kernels.ops import Op, OpKind  # noqa: E402
from measure.microbench import kernels as bench_ops  # noqa: E402
from measure.microbench.kernels import UnsupportedOp, build_benchmark, measure_key, op_num_elements, split_key  # noqa: E402
from measure.microbench.timing import backward_call, summarize, time_call  # noqa: E402
from shardplan.cli.measure import measure_command  # noqa: E402
from tests.helpers.builders import REPO  # noqa: E402

CPU = torch.device("cpu")
REAL_MEASURE_KEY = bench_ops.measure_key
TINY_MODEL = """num_layers: 2
hidden_size: 32
ffn_hidden_size: 64
num_attention_heads: 4
num_query_groups: 2
vocab_size: 128
num_experts: 4
moe_router_topk: 2
moe_ffn_hidden_size: 16
first_k_dense_layers: 1
"""


@pytest.fixture(autouse=True)
def one_thread():
    # two OpenMP threads on a shared 2-core runner wake in scheduler quanta (~8 ms); one thread does not
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def test_summarize_median_and_interquartile_range():
    t = summarize([5.0, 1.0, 4.0, 2.0, 3.0])
    # statistics.quantiles (exclusive method) of 1..5: q1 = 1.5, q3 = 4.5
    assert (t.median_s, t.spread_s, t.num_reps) == (3.0, 3.0, 5)


def test_time_call_measures_a_known_sleep():
    t = time_call(lambda: time.sleep(0.002), "cpu", warmup=1, reps=5)
    assert 0.002 <= t.median_s < 0.05  # time.sleep never returns early (PEP 475)
    assert t.num_reps == 5


def test_budget_caps_repetitions_of_slow_calls():
    t = time_call(lambda: time.sleep(0.01), "cpu", warmup=1, reps=50, budget_s=0.03)
    assert t.num_reps == 3


def test_setup_is_not_timed():
    t = time_call(lambda: None, "cpu", warmup=1, reps=5, setup=lambda: time.sleep(0.005))
    assert t.median_s < 0.004


def test_dgrad_and_wgrad_are_timed_apart():
    x = torch.randn(16, 8, requires_grad=True)
    w = torch.randn(4, 8, requires_grad=True)
    dgrad = backward_call(lambda: x @ w.t(), (x,))()
    wgrad = backward_call(lambda: x @ w.t(), (w,))()
    assert len(dgrad) == 1 and dgrad[0].shape == x.shape
    assert len(wgrad) == 1 and wgrad[0].shape == w.shape


EVERY_KERNEL = [
    "fwd/gemm:32x16x8:bf16", "bwd_dgrad/gemm:32x8x16:bf16", "bwd_wgrad/gemm:8x16x32:bf16", "fwd/gemm:32x16x16:fp8",
    "fwd/grouped_gemm:2x8x16x8:bf16", "bwd_dgrad/grouped_gemm:2x8x8x16:bf16", "bwd_wgrad/grouped_gemm:2x8x16x8:bf16",
    "fwd/attention_fwd:1x4x2x16x16x8x1:bf16", "bwd_dgrad/attention_bwd:1x4x2x16x16x8x1:bf16",
    "fwd/rmsnorm:16x32:bf16", "bwd_dgrad/rmsnorm:16x32:bf16", "fwd/layernorm:16x32:bf16", "bwd_dgrad/layernorm:16x32:bf16",
    "fwd/swiglu:16x32:bf16", "bwd_dgrad/swiglu:16x32:bf16", "fwd/gelu:16x32:bf16", "bwd_dgrad/gelu:16x32:bf16",
    "fwd/squared_relu:16x32:bf16", "bwd_dgrad/squared_relu:16x32:bf16", "fwd/elementwise:512:bf16",
    "bwd_dgrad/elementwise:512:bf16", "fwd/ssd_scan:512:bf16", "bwd_dgrad/ssd_scan:512:bf16",
    "fwd/softmax_cross_entropy:16x64:bf16", "bwd_dgrad/softmax_cross_entropy:16x64:bf16",
    "fwd/embedding:16x32:bf16", "bwd_wgrad/embedding:16x32:bf16", "optimizer/optimizer_step:1000:fp32",
]


def test_every_op_kind_has_a_cpu_benchmark():
    covered = {split_key(k)[1].kind for k in EVERY_KERNEL}
    assert covered == set(OpKind)
    for key in EVERY_KERNEL:
        entry = measure_key(key, CPU, warmup=1, reps=3)
        assert entry.median_s > 0 and entry.num_reps == 3, key
        assert entry.dtype_used in ("bf16", "fp32"), key  # never fp8 on a CPU
    assert measure_key("fwd/gemm:32x16x16:fp8", CPU, warmup=0, reps=1).dtype_used != "fp8"


def test_gemm_outputs_have_the_op_shape_in_every_phase():
    for phase, shape in (("fwd", (32, 16, 8)), ("bwd_dgrad", (32, 8, 16)), ("bwd_wgrad", (8, 16, 32))):
        out = build_benchmark(phase, Op(OpKind.gemm, shape, "bf16"), CPU).fn()
        assert tuple(out.shape) == (shape[0], shape[1]), phase
    out = build_benchmark("fwd", Op(OpKind.grouped_gemm, (3, 8, 16, 4), "bf16"), CPU).fn()
    assert tuple(out.shape) == (3, 8, 16)


def test_bigger_gemm_takes_longer():
    small = measure_key("fwd/gemm:8x8x8:fp32", CPU, warmup=2, reps=7).median_s
    big = measure_key("fwd/gemm:256x256x256:fp32", CPU, warmup=2, reps=7).median_s  # 32768x the FLOPs
    assert big > 2 * small


def test_wrong_phase_is_refused():
    with pytest.raises(UnsupportedOp):
        build_benchmark("bwd_dgrad", Op(OpKind.attention_fwd, (1, 2, 2, 8, 8, 8, 1), "bf16"), CPU)
    with pytest.raises(UnsupportedOp):
        build_benchmark("fwd", Op(OpKind.optimizer_step, (10,), "fp32"), CPU)
    with pytest.raises(UnsupportedOp):
        split_key("gemm:1x2x3:bf16")


def test_op_num_elements():
    assert op_num_elements(Op(OpKind.gemm, (64, 32, 16), "bf16")) == 64 * 32
    assert op_num_elements(Op(OpKind.attention_fwd, (2, 8, 2, 128, 128, 64, 1), "bf16")) == 2 * 8 * 128 * 128
    assert op_num_elements(Op(OpKind.swiglu, (10, 7), "bf16")) == 140


def test_fingerprint_and_missing_cuda():
    fp = device_fingerprint(CPU)
    assert fp.startswith("cpu:") and fp.endswith(f":torch{torch.__version__}") and "-t1:" in fp
    if not torch.cuda.is_available():
        with pytest.raises(DeviceUnavailable, match="--device cpu"):
            resolve_device("cuda")


def _run(tmp_path, *extra):
    model = tmp_path / "tiny.yaml"
    model.write_text(TINY_MODEL)
    args = ["--model", str(model), "--seq-length", "32", "--tp", "1,2", "--ep", "1,2", "--device", "cpu",
            "--out", str(tmp_path / "table.json"), "--reps", "2", "--warmup", "0", "--threads", "1", *extra]
    return CliRunner().invoke(measure_command, args)


def _count_calls(monkeypatch, fail_after=None):
    calls = []
    real = REAL_MEASURE_KEY

    def counting(key, *args, **kwargs):
        if fail_after is not None and len(calls) == fail_after:
            raise KeyboardInterrupt
        calls.append(key)
        return real(key, *args, **kwargs)

    monkeypatch.setattr(measure_cli, "measure_key", counting)  # the name `shardplan measure` calls
    return calls


def test_cli_writes_a_table_and_a_second_run_measures_nothing(tmp_path, monkeypatch):
    calls = _count_calls(monkeypatch)
    first = _run(tmp_path)
    assert first.exit_code == 0, first.output
    table = CostTable.load(tmp_path / "table.json")
    (fp,) = table.fingerprints()
    assert table.num_entries(fp) == len(calls) > 40
    assert any(k.startswith("fwd/grouped_gemm:") for k in calls) and any(k.startswith("optimizer/") for k in calls)
    env = table.devices[fp].environment
    assert env.torch_version == torch.__version__ and env.device_type == "cpu" and env.num_threads == 1
    calls.clear()
    second = _run(tmp_path)
    assert second.exit_code == 0, second.output
    assert calls == [] and "measured 0" in second.output


def test_interrupted_run_keeps_its_entries_and_resumes(tmp_path, monkeypatch):
    calls = _count_calls(monkeypatch, fail_after=5)
    interrupted = _run(tmp_path)
    assert interrupted.exit_code != 0
    assert CostTable.load(tmp_path / "table.json").num_entries() == 5  # saved on the way out
    calls_after = _count_calls(monkeypatch)
    resumed = _run(tmp_path)
    assert resumed.exit_code == 0, resumed.output
    assert not set(calls) & set(calls_after)  # nothing measured twice
    assert CostTable.load(tmp_path / "table.json").num_entries() == 5 + len(calls_after)


def test_max_elements_skips_big_kernels_and_reports_them(tmp_path, monkeypatch):
    calls = _count_calls(monkeypatch)
    result = _run(tmp_path, "--max-elements", "2048")
    assert result.exit_code == 0, result.output
    assert "skipped (above --max-elements): fwd/softmax_cross_entropy:32x128:bf16" in result.output
    assert all(op_num_elements(split_key(k)[1]) <= 2048 for k in calls)


def test_cli_device_cuda_without_cuda_is_one_line(tmp_path):
    if torch.cuda.is_available():
        pytest.skip("CUDA present")
    result = _run(tmp_path, "--device", "cuda")
    assert result.exit_code == 2
    assert result.output.strip().splitlines()[-1].startswith("error: --device cuda: CUDA/ROCm is not available")


def test_gpu_step_core_runs_on_cpu(tmp_path):
    spec = importlib.util.spec_from_file_location("gpu_step", REPO / "bench" / "gpu_step.py")
    gpu_step = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gpu_step)
    model = tmp_path / "dense.yaml"
    model.write_text("num_layers: 8\nhidden_size: 32\nffn_hidden_size: 64\nnum_attention_heads: 4\n"
                     "num_query_groups: 2\nvocab_size: 100\nqk_layernorm: true\n")
    table = tmp_path / "t.json"
    result = gpu_step.run(str(model), 2, 16, 1, "cpu", "h100-sxm-80gb", str(table), steps=3, warmup=1, reps=2)
    assert result["layers"] == 2 and result["measured_step_s"] > 0 and result["kernel_sum_s"] > 0
    assert result["projected_step_s"] >= result["kernel_sum_s"]  # the projection adds the optimizer step
    # the reduced model's parameters: vocab padded to 128; per layer qkv 32x(4+2*2)*8, proj, fc1 32x128, fc2, 2 norms, q/k norms
    layer = 32 * 64 + 32 * 32 + 32 * 128 + 64 * 32 + 2 * 32 + 2 * 8
    assert result["num_params"] == 2 * layer + 2 * 128 * 32 + 32
    assert CostTable.load(table).num_entries() > 20


def test_budget_also_cuts_the_warmup_of_slow_calls():
    calls = []
    t = time_call(lambda: (calls.append(1), time.sleep(0.01)), "cpu", warmup=10, reps=50, budget_s=0.03)
    assert t.num_reps == 3 and len(calls) == 1 + 3
