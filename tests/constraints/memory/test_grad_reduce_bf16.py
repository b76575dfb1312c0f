"""--grad-reduce-in-bf16: Megatron's validate_args turns accumulate_allreduce_grads_in_fp32 off with bf16
params, so the grad buffer holds the param dtype (2 B/param instead of 4). Parsed from arguments, priced by memory,
written by render; fp16 training is unaffected."""
from constraints.megatron.argv_to_specs import parse_megatron_args
from constraints.memory.per_rank import static_from_params
from constraints.spec import DataParallelSharding, JobSpec, Precision, Recipe

BASE = ["--num-layers", "24", "--hidden-size", "2048", "--num-attention-heads", "16", "--seq-length", "2048",
        "--max-position-embeddings", "2048", "--vocab-size", "50257", "--micro-batch-size", "1",
        "--global-batch-size", "64", "--bf16"]
PARAMS = 8_030_261_248  # Llama-3.1-8B total parameters (published count)


def test_flag_is_parsed_not_ignored():
    cfg = parse_megatron_args(BASE + ["--grad-reduce-in-bf16"])
    assert cfg.recipe.grad_reduce_in_bf16
    assert "--grad-reduce-in-bf16" not in cfg.ignored_flags and "--grad-reduce-in-bf16" not in cfg.unknown_flags
    assert not parse_megatron_args(BASE).recipe.grad_reduce_in_bf16


def test_gradients_take_two_bytes_with_bf16_params_only():
    for sharding in DataParallelSharding:
        if sharding == DataParallelSharding.torch_fsdp2:
            continue
        r = Recipe(dp_sharding=sharding)
        bf16 = JobSpec(seq_length=4096, global_batch_size=8)
        fp32_grads = static_from_params(bf16, r, 8, PARAMS, 0, 0)["gradients"]
        bf16_grads = static_from_params(bf16, r.model_copy(update={"grad_reduce_in_bf16": True}), 8, PARAMS, 0, 0)["gradients"]
        assert fp32_grads == 2 * bf16_grads
    fp16 = JobSpec(seq_length=4096, global_batch_size=8, precision=Precision.fp16)
    r = Recipe(grad_reduce_in_bf16=True)
    assert static_from_params(fp16, r, 8, PARAMS, 0, 0)["gradients"] == 4 * PARAMS  # the flag reads only under --bf16


def test_render_writes_the_flag_and_parsing_reads_it_back():
    from constraints.models.load import load_model
    from templates.recipe_args import recipe_to_megatron_args

    model, job = load_model("Llama-3.1-8B"), JobSpec(seq_length=4096, global_batch_size=64)
    args = recipe_to_megatron_args(model, job, Recipe(tp=2, sequence_parallel=True, grad_reduce_in_bf16=True))
    assert "--grad-reduce-in-bf16" in args
    assert "--grad-reduce-in-bf16" not in recipe_to_megatron_args(model, job, Recipe(tp=2, sequence_parallel=True))
