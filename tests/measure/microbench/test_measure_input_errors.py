"""`measure` input errors follow the house rule: `error: <option>: ...` on one line, exit status 2."""
from __future__ import annotations

import pytest

from tests.helpers.builders import run_cli

# --- finding 12: `measure` input errors follow the house rule (`error: <option>: ...`, exit 2) ----------

TINY_4_HEADS = "num_layers: 2\nhidden_size: 64\nffn_hidden_size: 128\nnum_attention_heads: 4\nvocab_size: 128\n"


def _measure(tmp_path, *args):
    model = tmp_path / "tiny.yaml"
    model.write_text(TINY_4_HEADS)
    return run_cli("measure", "--model", str(model), "--out", str(tmp_path / "t.json"), *args)


def test_measure_seq_length_zero_names_the_option(tmp_path):
    rc, _, err = _measure(tmp_path, "--seq-length", "0", "--device", "cpu")
    assert rc == 2 and err == "error: --seq-length: Input should be greater than 0 (got 0)\n"


def test_measure_tp_that_divides_no_head_count_names_the_option(tmp_path):
    rc, _, err = _measure(tmp_path, "--seq-length", "32", "--tp", "3", "--device", "cpu")
    assert rc == 2
    assert err.splitlines()[-1] == ("error: --tp: no recipe in the space can shape this model's kernels "
                                    "(num_attention_heads=4 not divisible by tp=3); give --tp values that divide the model's sizes")
    assert not (tmp_path / "t.json").exists()


def test_measure_unknown_model_is_exit_2(tmp_path):
    rc, _, err = run_cli("measure", "--model", "Llama-9", "--seq-length", "32", "--out", str(tmp_path / "t.json"))
    assert rc == 2 and err.startswith("error: --model: unknown model 'Llama-9'") and err.count("\n") == 1


def test_measure_cuda_on_cpu_only_torch_names_the_option(tmp_path):
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("CUDA present")
    rc, _, err = _measure(tmp_path, "--seq-length", "32", "--device", "cuda")
    assert rc == 2 and err.startswith("error: --device cuda: CUDA/ROCm is not available") and err.count("\n") == 1

