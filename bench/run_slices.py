"""How the published rows are grouped and sliced for validation (shared by the fit and the cross-validation).

- `source_group`: the publication a row comes from, its `source_id` prefix. All releases of the Megatron-Bridge
  performance summary (MBR) are one publication: its releases re-measure the same configurations, so leaving
  out one release would leave its configurations in the fit.
- `release_group`: the same, but the performance summary split by release (a weaker fold, reported beside it).
- `software_generation`: the row's stack and release year (its `software` column), a slice every table reports.
- `model_family`: Llama, Qwen, DeepSeek-style MLA (DeepSeek, Moonlight, Kimi), gpt-oss, Nemotron, GPT-3,
  Mixtral, other.
- `precision_slice`: the row's training precision as its recipe names it (`precision: bf16`, `precision: mxfp8`,
  `precision: nvfp4` ...), issue 32's precision slice.
- `sequence_slices`: long context, `seq>=16k` and each length from 16k on (`seq=128k`).
- `is_torch_native`: NeMo AutoModel / torchtitan / PyTorch FSDP rows (`RunCase.torch_native`, bench/torch_native_rows.py),
  and Megatron rows run with `--use-torch-fsdp2`. Their step is FSDP's own prefetch/overlap and eager or `torch.compile`
  kernels, priced by measure/torch_native/step.py, not the Megatron-LM stack the projection prices, so no fit uses
  them and every validation reports them as their own slice.
- `published_regression`: rows whose publisher marks the figure itself as a known performance regression of a
  kernel library (PUBLISHED_REGRESSIONS). The projection prices the configuration; a library bug that the next
  release fixes is not an input it has, so no fit uses these rows and every validation reports them as their own
  slice, like the torch-native ones. `is_headline` is what is left: the rows fits and headlines use.
"""
from __future__ import annotations

from typing import Optional

from bench.runs import RunCase, load_runs
from bench.validate_projection import assume_moe_dispatcher
from constraints.software.generation import resolve
from constraints.spec import DataParallelSharding

_FAMILIES = [("llama", "Llama"), ("qwen", "Qwen"), ("deepseek", "DeepSeek/MLA"), ("moonlight", "DeepSeek/MLA"),
             ("kimi", "DeepSeek/MLA"), ("gpt-oss", "gpt-oss"), ("nemotron", "Nemotron"), ("gpt-3", "GPT-3"),
             ("gpt3", "GPT-3"), ("mixtral", "Mixtral")]


def source_group(case: RunCase) -> str:
    return case.id.split("-")[0]


def release_group(case: RunCase) -> str:
    """The publication, and for the Megatron-Bridge performance summary its release ("MBR 26.04.01"): the issue's
    "every publication or release left out" read release by release. bench.cross_validate purges a left-out release's
    configurations from its fit (`training_rows`), so the releases that re-measured them do not carry them back; the
    fit keeps the summary's other configurations, so it tests transfer across releases and configurations, not across
    publishers, and is reported beside `source_group`, never instead of it."""
    group = source_group(case)
    return f"{group} {case.bridge_release}" if group == "MBR" and case.bridge_release else group


def software_generation(case: RunCase) -> str:
    """The row's software generation as a slice label: its stack and the year of its release ("megatron-lm 2021",
    "nemo 2024", "megatron-bridge 2026"; constraints/software/generation.py places the release in time), or "unstated"
    where the row's source does not say."""
    if not case.software:
        return "unstated"
    gen = resolve(case.software)
    return f"{gen.stack} {gen.month[:4]}"


def model_family(case: RunCase) -> str:
    name = case.model.name.lower()
    return next((fam for key, fam in _FAMILIES if name.startswith(key)), "other")


LONG_CONTEXT_TOKENS = 16384  # issue 32's "sequence length >= 16k" slice


def sequence_slices(case: RunCase) -> list[str]:
    """Sequence-length slices a row belongs to: `seq>=16k` from 16,384 tokens on, and its own length (`seq=32k`) there,
    so that bench.cross_validate reports long context apart from the 4k-8k rows that dominate every fold."""
    s = case.job.seq_length
    if s < LONG_CONTEXT_TOKENS:
        return []
    return ["seq>=16k", f"seq={s // 1024}k" if s % 1024 == 0 else f"seq={s}"]


def precision_slice(case: RunCase) -> str:
    """The row's precision as a slice label (`precision: fp8-tensorwise`): constraints.spec.Precision's value, which
    names the recipe (delayed / tensorwise / blockwise / MX scaling, NVFP4), so each quantisation recipe is reported
    apart (issue 32: "no slice (part, family, precision, ...) has a median above 12 %")."""
    return f"precision: {case.job.precision.value}"


def is_torch_native(case: RunCase) -> bool:
    return case.torch_native is not None or case.recipe.dp_sharding == DataParallelSharding.torch_fsdp2


# (Megatron-Bridge release, model family) -> the publisher's own statement that the release's figures for that model
# are a known regression. Keyed by release and family, never by row: every row of that table is covered. The family
# key also covers gpt-oss-20b, which the footnote does not name; cudnn-frontend#256 reports the regressed kernel on
# GPT-OSS-20B and DeepSeek-V3 workloads, and runs.csv has no 26.06.01 gpt-oss-20b row.
PUBLISHED_REGRESSIONS: dict[tuple[str, str], str] = {
    ("26.06.01", "gpt-oss"): (
        "NVIDIA-NeMo/Megatron-Bridge docs/performance-summary-archive.md @067f987d, 26.06.01 GPT OSS 120B table, "
        "footnote [^gpt-oss-note]: 'Performance regression in GPT-OSS 120B pre-training is a known issue "
        "(NVIDIA/cudnn-frontend#256). It will be resolved with the next container release.' cudnn-frontend#256: "
        "grouped_gemm_dglu_wrapper_sm100 (the MoE grouped GEMM + dGeGLU backward) 10x slower from cudnn-frontend 1.24.0"),
}


def bridge_release(case: RunCase) -> Optional[str]:
    """The Megatron-Bridge release of a performance-summary row ('26.06.01'); None for a verification card (its
    commit, not a release table) and for other sources."""
    release = case.bridge_release
    return None if release is None or release.startswith("card@") else release


def published_regression(case: RunCase) -> Optional[str]:
    """The publisher's note when the row's release flags its model's figures as a known regression, else None."""
    release = bridge_release(case)
    return PUBLISHED_REGRESSIONS.get((release, model_family(case))) if release else None


def is_headline(case: RunCase) -> bool:
    """A row the fits and headline figures use: Megatron stack, and not a publisher-flagged regression."""
    return not is_torch_native(case) and published_regression(case) is None


def moe_slices(case: RunCase) -> list[str]:
    """The MoE slices a row belongs to: `moe` for every row whose model has experts, and `moe in MBR` for those of the
    Megatron-Bridge performance summary, the publication that holds most MoE rows, whose held-out fold therefore fits
    the MoE constants on the fewest MoE rows (issue 32)."""
    if not case.model.is_moe:
        return []
    return ["moe", "moe in MBR"] if source_group(case) == "MBR" else ["moe"]


def throughput_cases(cases: Optional[list[RunCase]] = None) -> list[RunCase]:
    """Ran rows with a measured tokens/s/GPU, with the dispatcher assumption validate_projection makes."""
    cases = assume_moe_dispatcher(cases if cases is not None else load_runs())
    return [c for c in cases if c.outcome == "ran" and "tokens_per_s_per_gpu" in c.measured]
