"""Rendered scripts ready to launch (issue 31), run the way a user types the commands:

- every `/path/to/...` placeholder is listed on stderr and in the script's header, and `check` warns about each one;
- a real --data-path needs --tokenizer-model (else NullTokenizer trains on ids that mean nothing to the data), unless
  --mock-data asks for synthetic batches;
- the sbatch file states --output/--error, and --time/--partition/--account and a pyxis container when given by flag
  or by --slurm-config; the job is named after the model;
- the README's solve -> render -> check round trip leaves no placeholder unflagged.
"""
from __future__ import annotations

import json
import re
import shutil
import subprocess

import pytest

import shardplan
from boundary.errors import ShardplanError
from tests.helpers.builders import REPO, run_cli

EXAMPLE = str(REPO / "constraints" / "examples" / "llama3-70b-h100.yaml")
HW = ["--hardware", "h100-sxm-80gb"]
SITE = ["--data-path", "/lustre/fineweb_text_document", "--tokenizer-model", "meta-llama/Llama-3.1-70B",
        "--checkpoint-dir", "/lustre/ckpt", "--megatron-path", "/opt/Megatron-LM"]
BASH = shutil.which("bash")


def _placeholder_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("placeholder: ")]


def test_every_placeholder_is_on_stderr_in_the_header_and_warned_by_check(tmp_path):
    out = tmp_path / "train.sh"
    rc, _, err = run_cli("render", EXAMPLE, "-o", str(out))
    assert rc == 0
    listed = _placeholder_lines(err)
    options = [line.split()[1] for line in listed]
    assert options == ["--megatron-path", "--data-path", "--tokenizer-model", "--checkpoint-dir"]
    script = out.read_text()
    assert "# PLACEHOLDERS (4): replace each before launching" in script
    assert [f"#   {line}" for line in listed] == [line for line in script.splitlines() if line.startswith("#   placeholder: ")]
    rc, stdout, _ = run_cli("check", str(out), *HW)
    warned = [line for line in stdout.splitlines() if line.startswith("warning") and "placeholder" in line]
    assert {re.search(r"(--[a-z-]+) /path/to/", line).group(1) for line in warned} == \
        {"--data-path", "--tokenizer-model", "--tensorboard-dir", "--save", "--load"}


def test_check_json_names_the_placeholder_rule(tmp_path):
    out = tmp_path / "train.sh"
    run_cli("render", EXAMPLE, "-o", str(out))
    rc, stdout, _ = run_cli("check", str(out), *HW, "--json")
    warnings = [w for w in json.loads(stdout)["warnings"] if w["rule"] == "placeholder_path"]
    assert len(warnings) == 5 and all("placeholder" in w["message"] for w in warnings)


def test_a_real_data_path_without_its_tokenizer_is_refused_in_one_line():
    rc, stdout, err = run_cli("render", EXAMPLE, "--data-path", "/lustre/fineweb_text_document")
    assert rc == 2 and stdout == "" and err.count("\n") == 1
    assert err.startswith("error: --tokenizer-model: ") and "--mock-data" in err


def test_mock_data_is_asked_for_explicitly_and_excludes_a_data_path():
    rc, script, err = run_cli("render", EXAMPLE, "--mock-data", "--checkpoint-dir", "/c", "--megatron-path", "/m")
    assert rc == 0 and _placeholder_lines(err) == []
    assert "--mock-data" in script and "--tokenizer-type NullTokenizer" in script and "--data-path" not in script
    rc, _, err = run_cli("render", EXAMPLE, "--mock-data", "--data-path", "/lustre/x")
    assert rc == 2 and err.startswith("error: --mock-data: ") and err.count("\n") == 1


def test_a_mock_data_script_renders_as_mock_data(tmp_path):
    source = tmp_path / "mock.sh"
    run_cli("render", EXAMPLE, "--mock-data", "-o", str(source))
    rc, script, _ = run_cli("render", str(source), *HW, "--format", "slurm")
    assert rc == 0 and "--mock-data" in script and "--data-path" not in script


def test_slurm_options_from_flags_and_from_a_config_file(tmp_path):
    config = tmp_path / "cluster.yaml"
    config.write_text("partition: batch\naccount: proj-42\ntime: 2-00:00:00\noutput: logs/%x-%j.out\n"
                      "container_image: nvcr.io#nvidia/pytorch:25.01-py3\ncontainer_mounts: /lustre:/lustre\n")
    rc, script, _ = run_cli("render", EXAMPLE, "--format", "slurm", *SITE, "--slurm-config", str(config),
                            "--time", "4:00:00")
    assert rc == 0
    sbatch = [line for line in script.splitlines() if line.startswith("#SBATCH ")]
    assert sbatch == ["#SBATCH --job-name=Llama-3.1-70B", "#SBATCH --nodes=8", "#SBATCH --ntasks-per-node=1",
                      "#SBATCH --gpus-per-node=8", "#SBATCH --exclusive", "#SBATCH --output=logs/%x-%j.out",
                      "#SBATCH --error=%x-%j.err", "#SBATCH --time=4:00:00", "#SBATCH --partition=batch",
                      "#SBATCH --account=proj-42"]  # the flag's --time wins over the file's
    assert "srun --kill-on-bad-exit=1 '--container-image=nvcr.io#nvidia/pytorch:25.01-py3' " \
           "--container-mounts=/lustre:/lustre torchrun" in script
    assert "mkdir -p logs" in script  # sbatch does not create the log folder
    if BASH is not None:
        path = tmp_path / "train.sbatch"
        path.write_text(script)
        assert subprocess.run([BASH, "-n", str(path)]).returncode == 0


def test_without_slurm_options_the_script_says_what_the_cluster_decides():
    rc, script, _ = run_cli("render", EXAMPLE, "--format", "slurm", *SITE)
    assert rc == 0 and "#SBATCH --output=%x-%j.out" in script and "#SBATCH --error=%x-%j.err" in script
    assert "# Not stated, so the cluster's defaults apply: --time, --partition, --account" in script
    assert "apptainer exec --nv" in script  # how a user without pyxis runs it in a container


@pytest.mark.parametrize("args,needle", [
    (["--slurm-config", "CONFIG"], "--slurm-config"),  # a misspelt key: extra="forbid"
    (["--time", "4h"], "--time: "),
    (["--partition", "batch; rm -rf ~"], "--partition: "),
    (["--slurm-output", "logs/a b.out"], "--slurm-output: "),
    (["--container-image", "img\nrm -rf ~"], "--container-image: "),
])
def test_a_bad_slurm_setting_is_one_line_exit_2(tmp_path, args, needle):
    config = tmp_path / "cluster.yaml"
    config.write_text("partiton: batch\n")
    args = [str(config) if a == "CONFIG" else a for a in args]
    rc, stdout, err = run_cli("render", EXAMPLE, "--format", "slurm", *SITE, *args)
    assert rc == 2 and stdout == "" and err.count("\n") == 1 and err.startswith("error: ") and needle in err
    if "--slurm-config" in args:
        assert "partiton" in err and "did you mean partition" in err


def test_slurm_settings_with_another_format_are_refused_not_dropped():
    rc, _, err = run_cli("render", EXAMPLE, *SITE, "--partition", "batch")
    assert rc == 2 and err == "error: --partition: only --format slurm writes sbatch settings; add --format slurm or drop them\n"


def test_readme_round_trip_leaves_no_placeholder_unflagged(tmp_path):
    """The README's first screen: solve --render, render one answer with the site's paths, check it."""
    plans = tmp_path / "plans"
    rc, _, err = run_cli("solve", "--model", "Llama-3.1-8B", *HW, "--nodes", "1", "--seq-length", "4096",
                         "--global-batch-size", "64", "--tp", "2", "--pp", "1", "--cp", "1", "--mbs", "1", "--top", "1",
                         "--render", str(plans))
    assert rc == 0
    assert len([line for line in err.splitlines() if line.startswith("render: placeholder: ")]) == 4
    assert "placeholder(s) to replace before launching" in (plans / "SUMMARY.md").read_text()
    first = plans / "01-Llama-3.1-8B-tp2-pp1-vpp1-cp1-ep1-mbs1.sh"  # the name docs/rendering.md's block renders
    out = tmp_path / "train.sbatch"
    rc, _, err = run_cli("render", str(first), *HW, "--format", "slurm", "-o", str(out),
                         "--data-path", "/lustre/fineweb_text_document", "--tokenizer-model", "meta-llama/Llama-3.1-8B",
                         "--checkpoint-dir", "/lustre/ckpt", "--megatron-path", "/opt/Megatron-LM",
                         "--partition", "batch", "--time", "4:00:00")
    assert rc == 0 and _placeholder_lines(err) == [] and "/path/to/" not in err
    script = out.read_text()
    assert "/path/to/" not in script and "#SBATCH --job-name=Llama-3.1-8B" in script
    rc, stdout, _ = run_cli("check", str(out), *HW)
    assert rc == 0 and "LEGAL" in stdout and "placeholder" not in stdout


@pytest.mark.parametrize("kwargs,needle", [
    (dict(format="slurm", slurm="partition=batch"), r"^slurm: .*mapping"),
    (dict(format="slurm", slurm={"partion": "batch"}), r"^slurm: unknown key 'partion'; did you mean partition"),
    (dict(format="slurm", slurm={"partition": 3}), r"^--partition: "),
    (dict(format="torchrun", slurm={"partition": "batch"}), r"^--partition: only --format slurm"),
    (dict(mock_data="yes"), r"^-?-?mock.data: "),  # the API's argument edge may name it first (shardplan/api.py)
])
def test_the_api_refuses_bad_render_settings_with_a_shardplan_error(kwargs, needle):
    with pytest.raises(ShardplanError) as refused:
        shardplan.render(EXAMPLE, **kwargs)
    assert re.search(needle, str(refused.value)) and "\n" not in str(refused.value)


def test_a_source_script_reading_data_with_null_tokenizer_needs_a_tokenizer_or_mock_data():
    """Megatron's own gpt example shape: --data-path with --vocab-size and no tokenizer flags (NullTokenizer)."""
    source = str(REPO / "tests" / "data" / "scripts" / "gpt_dense_distributed.sh")
    rc, _, err = run_cli("render", source, *HW, "--force")
    assert rc == 2 and err.startswith("error: --tokenizer-model: the script reads --data-path ") and err.count("\n") == 1
    rc, script, _ = run_cli("render", source, *HW, "--force", "--tokenizer-model", "gpt2")
    assert rc == 0 and "--tokenizer-model gpt2" in script and "--data-path" in script
    rc, script, _ = run_cli("render", source, *HW, "--force", "--mock-data")
    assert rc == 0 and "--mock-data" in script and "--data-path" not in script
