"""The NeMo long-sequence table as a check of long-context attention (session 38, issue 32 item 2):
NVIDIA/NeMo/docs/source/performance/performance_long_sequence.md, Llama2-7B FP8 on DGX-H100, NeMo 24.03.01, with-CP layouts from
4k to 512k (runs.csv NEMOLS-370..384, even ids). It publishes TFLOP/s per GPU only (768 at 4k ... 549 at 512k) and no
constant is fitted on it, so it is out of sample for every fold."""
import statistics

import pytest

from bench.runs import load_runs, project_case
from hardware.profile import load_profile
from measure.projection.flops import megatron_flops

WITH_CP = {"NEMOLS-370": (4096, 1, 768.0), "NEMOLS-372": (8192, 1, 730.0), "NEMOLS-374": (16384, 1, 660.0),
           "NEMOLS-376": (32768, 2, 610.0), "NEMOLS-378": (65536, 2, 574.0), "NEMOLS-380": (131072, 4, 555.0),
           "NEMOLS-382": (262144, 8, 549.0), "NEMOLS-384": (524288, 16, 549.0)}
LLAMA2_VOCAB = 32000


@pytest.fixture(scope="module")
def errors():
    """Row id -> (projected / published - 1 in Megatron's causal-half count, the same under a full-s^2 count)."""
    cases = {c.id: c for c in load_runs() if c.id in WITH_CP}
    out = {}
    for rid, (seq, cp, tflops) in WITH_CP.items():
        c = cases[rid]
        assert (c.job.seq_length, c.recipe.cp, c.measured["tflops_per_gpu"]) == (seq, cp, tflops)
        p = project_case(c, load_profile(c.hardware))
        per_token = megatron_flops(c.model, seq, 1, LLAMA2_VOCAB) / seq
        # per-token FLOPs are a + b s; the core attention's causal half is b s, a full-s^2 count adds it again
        b = (megatron_flops(c.model, 2 * seq, 1, LLAMA2_VOCAB) / (2 * seq) - per_token) / seq
        out[rid] = (p.model_tflops_per_gpu / tflops - 1, p.model_tflops_per_gpu * (per_token + b * seq) / per_token / tflops - 1)
    return out


def test_the_table_reads_in_the_causal_half_count(errors):
    """Only Megatron's count (causal attention at half the s^2 scores) reads the table consistently: a full-s^2 count
    would put 512k, where attention is 91 % of the FLOPs, tens of percent above the 4k row."""
    half = [e for e, _ in errors.values()]
    full = [f for _, f in errors.values()]
    assert max(half) - min(half) < 0.2
    assert full[-1] - full[0] > 0.4


def test_long_context_attention_reads_within_the_table(errors):
    """Held out (no row of the page is fitted on): median |error| 5 % over 4k-512k; the 512k row, 91 % attention, within
    15 % (before session 38: median 11 %, 512k -23 %, the fitted attention scale holding 0.85 of the kernel rate)."""
    half = {rid: e for rid, (e, _) in errors.items()}
    assert statistics.median(abs(e) for e in half.values()) < 0.08
    assert abs(half["NEMOLS-384"]) < 0.15
    assert all(abs(e) < 0.05 for rid, e in half.items() if WITH_CP[rid][0] <= 16384)
