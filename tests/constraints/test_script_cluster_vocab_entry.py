"""How `check` completes what a launch script does not state, and what Megatron itself refuses:
the cluster (the command line wins over the script, with a warning), the vocabulary from the tokenizer,
the entry point's model family, and Megatron's own argparse / validate_args exits as illegal verdicts."""
from __future__ import annotations

import pytest

from constraints.megatron.argv_to_specs import MegatronArgsError, parse_megatron_args
from constraints.read import InputError, load_check_input

MODEL = ("--num-layers 8 --hidden-size 1024 --num-attention-heads 16 --seq-length 2048 --max-position-embeddings 2048 "
         "--micro-batch-size 1 --global-batch-size 32 --bf16")


def _script(tmp_path, text, name="train.sh"):
    p = tmp_path / name
    p.write_text("#!/bin/bash\nexport CUDA_DEVICE_MAX_CONNECTIONS=1\n" + text)
    return str(p)


def test_the_command_line_cluster_wins_over_the_scripts_with_a_warning(tmp_path):
    path = _script(tmp_path, f"torchrun --nnodes 2 --nproc_per_node 8 pretrain_gpt.py {MODEL} --vocab-size 32000\n")
    own = load_check_input(path, "h100-sxm-80gb", None, None)
    assert (own.case.placement.num_nodes, own.case.placement.gpus_per_node) == (2, 8)
    assert not [w for w in own.warnings if w.rule == "script_world"]
    over = load_check_input(path, "h100-sxm-80gb", 4, None)
    assert (over.case.placement.num_nodes, over.case.placement.gpus_per_node) == (4, 8)
    said = [w.message for w in over.warnings if w.rule == "script_world"]
    assert said == ["the script launches 2 for --nodes, the command line says 4: judged with --nodes 4 (the command line wins)"]


@pytest.mark.parametrize("nnodes", ["--nnodes $NODES", "--nnodes=$(scontrol show hostnames | wc -l)"])
def test_a_node_count_held_in_an_unknown_variable_is_not_taken_as_torchruns_default(tmp_path, nnodes):
    # torchrun's --nnodes defaults to 1 only when the option is absent; `--nnodes $NODES` with NODES unknown here
    # launches an unknown number of nodes, so check asks for --nodes instead of judging one node
    path = _script(tmp_path, f"torchrun {nnodes} --nproc_per_node 8 pretrain_gpt.py {MODEL} --vocab-size 32000\n")
    with pytest.raises(InputError, match="--nodes/--gpus-per-node: the script does not fix the world size"):
        load_check_input(path, "h100-sxm-80gb", None, None)
    given = load_check_input(path, "h100-sxm-80gb", 2, None)
    assert (given.case.placement.num_nodes, given.case.placement.gpus_per_node) == (2, 8)
    assert not [w for w in given.warnings if w.rule == "script_world"]


def test_a_world_too_small_for_the_scripts_degrees_is_an_illegal_verdict(tmp_path):
    from shardplan.api import check

    path = _script(tmp_path, f"torchrun --nproc_per_node 4 pretrain_gpt.py {MODEL} --vocab-size 32000 "
                             "--tensor-model-parallel-size 8\n")
    res = check(path, hardware="h100-sxm-80gb", project=False)
    assert not res.legal and "world_divisible" in [v.rule for v in res.violations]


@pytest.mark.parametrize("extra, vocab", [
    ("--vocab-file v.json --merge-file m.txt", 50257),  # pretrain_gpt.py's default GPT2BPETokenizer
    ("--tokenizer-type GPT2BPETokenizer --vocab-size 128", 50257),  # Megatron sizes it from the tokenizer
    ("--tokenizer-type NullTokenizer --mock-data --vocab-size 128256", 128256),
    ("--tokenizer-type HuggingFaceTokenizer --tokenizer-model deepseek-ai/DeepSeek-V3", 129280),
    ("--tokenizer-type HuggingFaceTokenizer --tokenizer-model /models/Qwen3-8B/", 151936),
    ("--vocab-size 32000", 32000),
])
def test_vocabulary_from_the_tokenizer(extra, vocab):
    cfg = parse_megatron_args((MODEL + " " + extra).split(), entry_point="pretrain_gpt.py")
    assert cfg.model.vocab_size == vocab


@pytest.mark.parametrize("extra", ["--tokenizer-type NullTokenizer --mock-data",
                                   "--tokenizer-type Llama2Tokenizer --tokenizer-model /tok/unknown.model"])
def test_an_unknowable_vocabulary_names_the_flag_to_add(extra):
    with pytest.raises(MegatronArgsError, match=r"^--vocab-size: .*add --vocab-size N"):
        parse_megatron_args((MODEL + " " + extra).split(), entry_point="pretrain_gpt.py")


@pytest.mark.parametrize("entry, family", [("pretrain_bert.py", "BERT"), ("pretrain_t5.py", "T5"),
                                           ("pretrain_vlm.py", "vision-language")])
def test_an_entry_point_that_builds_no_gpt_model_is_named(tmp_path, entry, family):
    path = _script(tmp_path, f"torchrun --nproc_per_node 8 {entry} {MODEL} --vocab-size 32000\n")
    with pytest.raises(InputError, match=f"{entry} builds a {family}"):
        load_check_input(path, "h100-sxm-80gb", None, None)


@pytest.mark.parametrize("extra, rule, said", [
    ("--DDP-impl local", "megatron_argparse", "unrecognized arguments: --DDP-impl local"),
    ("--tensor-model-parallel-size 2 4", "megatron_argparse", "unrecognized arguments: 4"),
    ("--checkpoint-activations", "megatron_exits", "--checkpoint-activations is no longer valid"),
    ("--step-batch-size-schedule 0:16", "megatron_exits", "Cannot specify both --step-batch-size-schedule"),
    ("--use-megatron-fsdp --use-distributed-optimizer", "megatron_exits", "requires the `fsdp_dtensor`"),
])
def test_what_megatron_refuses_is_an_illegal_verdict_with_its_message(tmp_path, extra, rule, said):
    path = _script(tmp_path, f"torchrun --nproc_per_node 8 pretrain_gpt.py {MODEL} --vocab-size 32000 {extra}\n")
    loaded = load_check_input(path, "h100-sxm-80gb", None, None)
    found = [v for v in loaded.preflight_violations if v.rule == rule]
    assert found and said in found[0].message


def test_an_unfused_attention_backend_not_modelled_with_its_attention_is_refused_by_name():
    # the unfused backends are modelled for standard attention (tests/constraints/memory/test_attention_backend_scores.py), not with an
    # off-by-one softmax offset
    with pytest.raises(MegatronArgsError, match="--attention-backend unfused with --softmax-type off-by-one"):
        parse_megatron_args((MODEL + " --vocab-size 32000 --attention-backend unfused --softmax-type off-by-one").split())
    assert parse_megatron_args((MODEL + " --vocab-size 32000 --attention-backend flash").split()).model


def test_an_unreadable_sourced_file_leaves_the_launch_environment_unjudged(tmp_path):
    # TP 2 on H100 (arch 9) needs CUDA_DEVICE_MAX_CONNECTIONS=1; a sourced file check cannot read may export it, so
    # the rule is not judged (and the warning says so) instead of an illegal verdict on a value nobody knows
    args = f"{MODEL} --vocab-size 32000 --tensor-model-parallel-size 2"
    p = tmp_path / "train.sh"
    p.write_text(f"#!/bin/bash\nsource ./cluster_env.sh\ntorchrun --nnodes 1 --nproc_per_node 8 pretrain_gpt.py {args}\n")
    from shardplan.verdict import check_and_project

    unknown = load_check_input(str(p), "h100-sxm-80gb", None, None)
    assert unknown.env is None
    assert any("the launch environment is not judged" in w.message for w in unknown.warnings if w.rule == "sourced_file")
    assert check_and_project(unknown, project=False)["report"].legal
    # stated in the script itself, the variable is judged as before
    p.write_text(f"#!/bin/bash\nsource ./cluster_env.sh\nexport CUDA_DEVICE_MAX_CONNECTIONS=8\n"
                 f"torchrun --nnodes 1 --nproc_per_node 8 pretrain_gpt.py {args}\n")
    stated = check_and_project(load_check_input(str(p), "h100-sxm-80gb", None, None), project=False)["report"]
    assert [v.rule for v in stated.violations] == ["cuda_device_max_connections"]
