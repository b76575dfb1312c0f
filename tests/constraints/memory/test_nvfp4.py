"""NVFP4 end to end: Megatron's --fp4-* flags read into the specs and rendered back, saved GEMM inputs at
9 bytes per 16 elements, fp4 GEMMs priced at the part's FP4 peak with their quantisation passes, and
Megatron's refusals as violations (the rules' own legal/illegal cases are in tests/constraints/rules/test_rules.py)."""
import pytest

from constraints.case import Case
from constraints.check import check_case
from constraints.megatron.argv_to_specs import MegatronArgsError, parse_megatron_args
from constraints.memory import activations as act
from constraints.models.load import load_model
from constraints.spec import JobSpec, Placement, Precision, Recipe
from hardware.profile import load_profile
from measure.kernels.layer_ops import attention_ops, gemm_dtype
from measure.kernels.roofline import peak_flops
from measure.projection.project import project
from templates.recipe_args import recipe_to_megatron_args

BASE = ["--num-layers", "32", "--hidden-size", "4096", "--num-attention-heads", "32", "--seq-length", "8192",
        "--max-position-embeddings", "8192", "--vocab-size", "128256", "--micro-batch-size", "1",
        "--global-batch-size", "64", "--bf16", "--use-distributed-optimizer"]


def test_fp4_flags_parse_to_nvfp4_and_param_gather():
    c = parse_megatron_args(BASE + ["--fp4-format", "e2m1", "--fp4-recipe", "nvfp4", "--fp4-param-gather"])
    assert c.job.precision is Precision.nvfp4 and c.recipe.fp4_param_gather
    assert parse_megatron_args(BASE + ["--fp4-format", "e2m1"]).job.precision is Precision.nvfp4  # nvfp4 is the default recipe


def test_unmodelled_fp4_recipe_and_format_are_refused_in_one_line():
    with pytest.raises(MegatronArgsError, match="--fp4-recipe custom is not modelled"):
        parse_megatron_args(BASE + ["--fp4-format", "e2m1", "--fp4-recipe", "custom"])
    with pytest.raises(MegatronArgsError):
        parse_megatron_args(BASE + ["--fp4-format", "e4m3"])  # TransformerConfig: Literal['e2m1']


def test_render_writes_the_fp4_flags_and_reads_back_the_same_job():
    model = load_model("Llama-3.1-8B")
    job = JobSpec(seq_length=8192, global_batch_size=64, precision="nvfp4")
    recipe = Recipe(tp=2, pp=2, fp4_param_gather=True, sequence_parallel=True)
    argv = recipe_to_megatron_args(model, job, recipe)
    i = argv.index("--fp4-format")
    assert argv[i:i + 4] == ["--fp4-format", "e2m1", "--fp4-recipe", "nvfp4"] and "--fp4-param-gather" in argv
    assert "--fp8-format" not in argv
    back = parse_megatron_args(argv, world_size=16)
    assert back.job.precision is Precision.nvfp4 and back.recipe.fp4_param_gather


def test_fp4_with_fp8_flags_is_illegal_when_checked():
    """Megatron raises on --fp4-format with --fp8-format (arguments.py validate_args)."""
    argv = BASE + ["--fp4-format", "e2m1", "--fp8-format", "e4m3"]
    c = parse_megatron_args(argv)
    case = Case(model=c.model, job=c.job, recipe=c.recipe, placement=Placement(hardware="b200", num_nodes=1, gpus_per_node=8))
    report = check_case(case, load_profile("b200"), flags=c.raw)
    assert not report.legal and "fp4_excludes_fp8" in {v.rule for v in report.violations}


def test_saved_gemm_inputs_take_nine_bytes_per_sixteen_elements():
    """E2M1 pairs in a byte + one E4M3 scale per 16 elements (arXiv 2509.25149 sec. 2): exactly 9/16 of an
    element's byte per saved GEMM input, rounded up per tensor; every other saved tensor is unchanged."""
    model = load_model("Llama-3.1-8B")
    recipe = Recipe(tp=2, sequence_parallel=True)
    terms = {}
    for prec in ("bf16", "mxfp8", "nvfp4"):
        sh = act.shape_of(JobSpec(seq_length=8191, global_batch_size=8, precision=prec), recipe)
        terms[prec] = act.layer_terms(model, sh, False)
    T, h, f = 8191, 4096, 14336 // 2
    assert terms["bf16"]["qkv_input"] == -(-2 * T * h // 2) and terms["mxfp8"]["qkv_input"] == -(-T * h // 2)
    assert terms["nvfp4"]["qkv_input"] == -(-9 * T * h // 32)
    assert terms["nvfp4"]["act_output"] == -(-9 * T * f // 16)
    assert terms["nvfp4"]["attn_output"] == -(-9 * T * 16 * 128 // 16)
    for key in ("ln1_input", "q_k", "v", "fc1_output", "softmax_stats"):
        assert terms["nvfp4"][key] == terms["bf16"][key]


def test_fp4_gemms_use_the_fp4_peak_and_add_two_quantised_copies():
    job = JobSpec(seq_length=4096, global_batch_size=8, precision="nvfp4")
    assert gemm_dtype(job) == "fp4"
    assert peak_flops(load_profile("b200"), "fp4") == 9000e12  # b200.yaml peak_tflops.fp4 (datasheet, dense)
    ops = attention_ops(load_model("Llama-3.1-8B"), job, Recipe())
    qkv_fwd = [p for p in ops if p.module == "qkv" and p.op.kind.value == "gemm" and p.phase.value == "fwd"][0]
    assert qkv_fwd.op.dtype == "fp4"
    casts = [p for p in ops if p.module == "qkv" and p.op.kind.value == "elementwise" and p.phase.value == "fwd"]
    elems = 4096 * 4096
    # TE's NVFP4 quantiser: an amax read (nvte_hadamard_transform_amax, 2 B), then one Hadamard-fused pass reading bf16
    # (2 B) and writing the row- and column-wise fp4 copies (9/16 B each): measure/kernels/quantization.py
    assert casts[0].bytes_moved == pytest.approx((2 + 2 + 2 * 9 / 16) * elems)


def test_nvfp4_projects_faster_than_mxfp8_and_rejects_hopper():
    model = load_model("Llama-3.1-70B")
    recipe = Recipe(tp=1, pp=4, vpp=5, schedule="interleaved", recompute={"granularity": "selective", "modules": ["core_attn"]})
    place = Placement(hardware="gb300-nvl72", num_nodes=16, gpus_per_node=4)
    gb300 = load_profile("gb300-nvl72")
    times = {p: project(model, JobSpec(seq_length=8192, global_batch_size=256, precision=p), recipe, place, gb300).iteration_time_s
             for p in ("mxfp8", "nvfp4")}
    assert times["nvfp4"] < times["mxfp8"]
    case = Case(model=model, job=JobSpec(seq_length=8192, global_batch_size=64, precision="nvfp4"), recipe=Recipe(tp=8),
                placement=Placement(hardware="h100-sxm-80gb", num_nodes=1, gpus_per_node=8))
    assert "nvfp4_hardware" in {v.rule for v in check_case(case, load_profile("h100-sxm-80gb")).violations}
