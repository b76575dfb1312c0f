"""Every writer (torchrun and slurm scripts; primus, bridge, bridge-overrides configs): render with hostile names and paths, read back with
shardplan's own reader (`check`'s), and the same recipe, job and paths come out, with nothing added: no `env_vars:`
section, no override, no other TP. A value the format cannot carry as data is refused in one line naming the option.

The injections were found by the second hostile round (issue 33): a newline in a model name added an `env_vars:`
section, and `--data-path 'x] model.tensor_model_parallel_size=8 dataset.split=[1'` read back as TP=8."""
from __future__ import annotations

import shutil

import pytest
import yaml
from click.testing import CliRunner

from constraints.case import Case, case_from_mapping
from constraints.read import load_check_input
from shardplan.cli.main import cli
from templates.escape import hydra_value, markdown_text
from templates.recipe_args import RenderPaths
from templates.render import RenderError, launch_env, render_script
from tests.helpers.builders import REPO
from tests.templates.test_render import GOLDEN_CASES

LAUNCH_FORMATS = ["torchrun", "slurm"]
STACK_FORMATS = ["primus", "bridge", "bridge-overrides"]
HOSTILE_NAMES = [
    "evil\nenv_vars:\n  CUDA_DEVICE_MAX_CONNECTIONS: 8",
    "evil\nmodel.tensor_model_parallel_size=8",
    "evil\r\n# x\u2028model.tensor_model_parallel_size=8",
    "q'uo\"te ${HOME} `id` \\ back # hash [b]=c \u00e9\u6f22",
]
# paths every format carries as data: brackets, `=`, `,`, `:`, unicode (a Hydra value single-quotes them)
CARRIED_PATHS = ["/d/x]model.tensor_model_parallel_size=8,dataset.split=[1", "/d/\u00e9\u6f22/a:b", "/d/{a}(b)@%+~"]
# text no override line keeps literal: whitespace and `#` (the reader splits on them), quotes, backslash, `$`
OVERRIDE_REFUSED = ["x] model.tensor_model_parallel_size=8 dataset.split=[1", "/d/a#b", "/d/it's", '/d/"q"', "/d/a\\b",
                    "/d/$HOME", "/d/a\nmodel.tensor_model_parallel_size=8"]
SAME_RECIPE = {"exclude": {"moe_dispatcher", "moe_grouped_gemm"}}  # dense: the MoE fields are not written


def _hostile_hardware(tmp_path, name: str) -> str:
    """The bundled H100 profile under a file name holding a newline, `#` and `=`."""
    folder = tmp_path / "hw"
    folder.mkdir(exist_ok=True)
    path = folder / f"h100 #{name}\nmodel.tensor_model_parallel_size=8.yaml"
    shutil.copy(REPO / "hardware" / "profiles" / "h100-sxm-80gb.yaml", path)
    return str(path)


def _case(name: str, hardware: str | None = None) -> Case:
    """Llama-2-7b at TP=2 (an injected TP=8 would show), its recompute modules written out as the writers write them."""
    case = case_from_mapping(dict(GOLDEN_CASES["llama2-7b-dense"], recipe=dict(
        tp=2, mbs=2, sequence_parallel=True, recompute={"granularity": "selective", "modules": ["core_attn"]})))
    placement = case.placement if hardware is None else case.placement.model_copy(update={"hardware": hardware})
    return case.model_copy(update={"model": case.model.model_copy(update={"name": name}), "placement": placement})


def _read_back(tmp_path, case: Case, fmt: str, paths: RenderPaths):
    text = render_script(case, fmt, paths)
    assert all(line.startswith("#") for line in text.splitlines()[:3])  # the header is comments only
    path = tmp_path / {"torchrun": "run.sh", "slurm": "run.sbatch", "bridge-overrides": "config.txt"}.get(fmt, "config.yaml")
    path.write_text(text)
    return text, load_check_input(str(path), case.placement.hardware, case.placement.num_nodes,
                                  case.placement.gpus_per_node)


@pytest.mark.parametrize("fmt", LAUNCH_FORMATS + STACK_FORMATS)
@pytest.mark.parametrize("name", HOSTILE_NAMES, ids=range(len(HOSTILE_NAMES)))
def test_a_hostile_model_name_and_hardware_path_stay_in_the_comment(tmp_path, fmt, name):
    case = _case(name, _hostile_hardware(tmp_path, "x"))
    paths = RenderPaths(data_path="/d/text_document", tokenizer_model="/t/tok", checkpoint_dir="/c")
    text, loaded = _read_back(tmp_path, case, fmt, paths)
    assert loaded.case.recipe.model_dump(**SAME_RECIPE) == case.recipe.model_dump(**SAME_RECIPE)
    assert loaded.case.job == case.job and loaded.flags["--data-path"] == ["/d/text_document"]
    env = launch_env(case) if fmt in LAUNCH_FORMATS else {}  # TP=2 before Blackwell: the scripts export one variable
    assert (loaded.env or {}) == env and not [line for line in text.splitlines() if line.startswith("env_vars")]
    assert loaded.unknown_flags == [] and loaded.case.recipe.tp == 2
    if fmt == "primus":  # the experiment's name is an identifier, not the raw name
        exp_name = yaml.safe_load(text)["exp_name"]
        assert set(exp_name) <= set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")


@pytest.mark.parametrize("fmt", STACK_FORMATS)
@pytest.mark.parametrize("data_path", CARRIED_PATHS)
def test_paths_with_brackets_equals_and_unicode_read_back_as_given(tmp_path, fmt, data_path):
    case = _case("Llama-2-7b")
    paths = RenderPaths(data_path=data_path, tokenizer_model=data_path + "/tok", checkpoint_dir=data_path + "/ck")
    _, loaded = _read_back(tmp_path, case, fmt, paths)
    assert loaded.case.recipe.model_dump(**SAME_RECIPE) == case.recipe.model_dump(**SAME_RECIPE)
    assert loaded.flags["--data-path"] == [data_path]
    assert loaded.flags["--tokenizer-model"] == data_path + "/tok"
    assert loaded.flags["--save"] == loaded.flags["--load"] == data_path + "/ck"
    assert loaded.case.recipe.tp == 2


@pytest.mark.parametrize("data_path", OVERRIDE_REFUSED)
def test_an_override_value_no_quoting_keeps_literal_is_refused_in_one_line(data_path):
    paths = RenderPaths(data_path=data_path, tokenizer_model="/t/tok")
    with pytest.raises(RenderError, match="^--data-path: ") as refused:
        render_script(_case("Llama-2-7b"), "bridge-overrides", paths)
    assert "\n" not in str(refused.value) and "--format bridge" in str(refused.value)


@pytest.mark.parametrize("fmt", STACK_FORMATS)
def test_an_interpolation_in_a_path_is_refused_where_the_stack_resolves_it(fmt):
    paths = RenderPaths(data_path="/d/${HOME}/x", tokenizer_model="/t/tok")
    with pytest.raises(RenderError, match=r"^--data-path: .*interpolation"):
        render_script(_case("Llama-2-7b"), fmt, paths)


def test_the_reported_injection_reads_back_as_the_recipe_or_is_refused(tmp_path):
    """The issue's own command: refused on the CLI with exit 2, one line; with the space gone it is a quoted value."""
    example = REPO / "constraints" / "examples" / "llama3-70b-h100.yaml"
    hostile = "x] model.tensor_model_parallel_size=8 dataset.split=[1"
    res = CliRunner().invoke(cli, ["render", str(example), "--format", "bridge-overrides", "--data-path", hostile,
                                   "--tokenizer-model", "/t/tok"])
    assert res.exit_code == 2 and res.stderr.startswith("error: --data-path: ") and res.stderr.count("\n") == 1
    case = _case("Llama-2-7b")
    _, loaded = _read_back(tmp_path, case, "bridge-overrides", RenderPaths(data_path=hostile.replace(" ", ""),
                                                                            tokenizer_model="/t/tok"))
    assert loaded.case.recipe.tp == 2 and loaded.flags["--data-path"] == [hostile.replace(" ", "")]


@pytest.mark.parametrize("value,written", [
    ("/d/text_document", "/d/text_document"), ("99,1,0", "'99,1,0'"), ("8", "'8'"), ("true", "'true'"),
    ("a]b", "'a]b'"), ("k=v", "'k=v'"), (["/a", "/b=c"], "[/a,'/b=c']"), (2, "2"), (False, "false"), (1e-05, "1.0e-05"),
])
def test_hydra_values_are_bare_only_when_plain(value, written):
    """Hydra's override grammar (hydra.cc/docs/advanced/override_grammar/basic): `,` makes a sweep, `[]` a list, `=` a
    key, and a bare `8` or `true` is a number or boolean; each of those is single-quoted to stay the text given."""
    assert hydra_value(value, "--data-path") == written
    assert yaml.safe_load(written) == value  # what shardplan's overrides reader (YAML-typed values) reads back


@pytest.mark.parametrize("text,shown", [
    ("Llama-3.1-70B", "Llama-3.1-70B"),
    ("a|b", "a\\|b"), ("# h", "\\# h"), ("`x`", "\\`x\\`"), ("<b>", "\\<b\\>"), ("[a](b)", "\\[a\\](b)"),
    ("a\nb\r\u2028c", "a b  c"), ("*_~$&!\\", "\\*\\_\\~\\$\\&\\!\\\\"),
])
def test_markdown_text_escapes_inline_syntax_and_keeps_one_line(text, shown):
    assert markdown_text(text) == shown


@pytest.mark.parametrize("fmt", ["bridge", "bridge-overrides"])
def test_mock_data_is_refused_where_the_config_has_no_field_for_it(fmt):
    with pytest.raises(RenderError, match="^--mock-data: "):
        render_script(_case("Llama-2-7b"), fmt, RenderPaths(mock_data=True))


def test_primus_carries_mock_data_as_the_megatron_argument(tmp_path):
    _, loaded = _read_back(tmp_path, _case("Llama-2-7b"), "primus", RenderPaths(mock_data=True))
    assert loaded.flags.get("--mock-data") is True and "--data-path" not in loaded.flags


@pytest.mark.parametrize("fmt", ["primus", "bridge"])
@pytest.mark.parametrize("data_path", ["/d/a\nmodel:\n  tensor_model_parallel_size: 8", "/d/it's \"q\" # not a comment",
                                       "/d/back\\slash\ttab"])
def test_yaml_formats_carry_what_an_override_line_cannot(tmp_path, fmt, data_path):
    """yaml.safe_dump quotes newlines, quotes, `#` and backslashes by YAML's own rules: the path reads back whole."""
    case = _case("Llama-2-7b")
    _, loaded = _read_back(tmp_path, case, fmt, RenderPaths(data_path=data_path, tokenizer_model="/t/tok"))
    assert loaded.flags["--data-path"] == [data_path] and loaded.case.recipe.tp == 2
