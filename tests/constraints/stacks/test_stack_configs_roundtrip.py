"""recipe -> render --format primus|bridge|bridge-overrides -> check gives back the recipe, the job, the verdict, the
memory and the projection that `check` gives the recipe itself (as the launch-script formats do). `--format yaml-cfg`
is refused: Megatron-LM's yaml loader cannot run a file of the recipe's own settings."""
import pytest
from click.testing import CliRunner

from constraints.case import load_case_yaml
from constraints.read import LoadedCase, load_check_input
from shardplan.cli.render import render_command
from shardplan.verdict import check_and_project
from templates.render import RenderError, render_script
from tests.helpers.builders import REPO, make_case

# bridge-overrides saved as .yaml too: its key=value lines read as one YAML string, and are the overrides all the same
FORMATS = [("primus", ".yaml"), ("bridge", ".yaml"), ("bridge-overrides", ".txt"), ("bridge-overrides", ".yaml")]
CASES = [
    load_case_yaml(REPO / "constraints" / "examples" / "llama3-70b-h100.yaml"),
    make_case("Mixtral-8x7B-v0.1", nodes=2, gbs=64, tp=2, ep=4, sequence_parallel=True, pp=2),
    make_case("Qwen3-30B-A3B", nodes=2, gbs=64, ep=8, recompute={"granularity": "selective", "modules": ["moe_act"]}),
    make_case("Llama-3.1-8B", nodes=1, gbs=32, tp=2, precision="fp8-tensorwise", sequence_parallel=True),
]


def _verdict(loaded):
    data = check_and_project(loaded)["json"]
    return data["legal"], data["fits"], data["memory"], data["projection"]


@pytest.mark.parametrize("fmt,suffix", FORMATS)
@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c.model.name}-{c.job.precision.value}")
def test_rendered_stack_config_checks_like_the_recipe(tmp_path, case, fmt, suffix):
    path = tmp_path / f"config{suffix}"
    path.write_text(render_script(case, fmt))
    loaded = load_check_input(str(path), case.placement.hardware, case.placement.num_nodes,
                              case.placement.gpus_per_node)
    assert loaded.source == fmt.removesuffix("-overrides")
    moe_only = set() if case.model.is_moe else {"moe_dispatcher", "moe_grouped_gemm"}
    assert loaded.case.recipe.model_dump(exclude=moe_only) == case.recipe.model_dump(exclude=moe_only)
    assert loaded.case.job == case.job
    assert loaded.unknown_flags == []  # every key the writer puts down is one the reader understands
    assert _verdict(loaded) == _verdict(LoadedCase(case=case))


def test_yaml_cfg_is_refused_in_one_line():
    """Megatron-LM d98e8a64: `load_yaml` returns a SimpleNamespace of the file's keys only, and parse_args then reads
    `args.disable_msc_deprecated` (training/arguments.py), which such a file does not hold."""
    with pytest.raises(RenderError, match="yaml_arguments.load_yaml") as exc:
        render_script(CASES[0], "yaml-cfg")
    assert "\n" not in str(exc.value)
    res = CliRunner().invoke(render_command, [str(REPO / "constraints" / "examples" / "llama3-70b-h100.yaml"),
                                              "--format", "yaml-cfg"])
    assert res.exit_code != 0 and "load_yaml" in res.output


@pytest.mark.parametrize("fmt,suffix", FORMATS)
def test_render_reads_a_stack_config_and_writes_another(tmp_path, fmt, suffix):
    """check -> render -> check from a stack config file: the CLI's render takes one as it takes a launch script."""
    src = REPO / "tests" / "data" / "stack_configs" / "bridge-llama8b-legal.yaml"
    out = tmp_path / f"out{suffix}"
    args = [str(src), "--hardware", "h100-sxm-80gb", "--nodes", "1", "--gpus-per-node", "8", "--format", fmt,
            "-o", str(out)]
    res = CliRunner().invoke(render_command, args)
    assert res.exit_code == 0, res.output
    before = load_check_input(str(src), "h100-sxm-80gb", 1, 8)
    after = load_check_input(str(out), "h100-sxm-80gb", 1, 8)
    assert after.case.recipe == before.case.recipe
    assert after.case.job == before.case.job
    shape = ("num_layers", "hidden_size", "num_attention_heads", "num_query_groups", "vocab_size", "ffn_hidden_size",
             "normalization", "tied_embeddings", "activation")
    assert [getattr(after.case.model, f) for f in shape] == [getattr(before.case.model, f) for f in shape]
