"""An HF config whose layer count is far past shardplan's bound is refused in one line before any per-layer list (MoE
layers, NoPE layers, window layers, a hybrid pattern's layers) is built from it, for every family the reader knows
(issue 33: a Llama 4 config with 10^9 layers built its MoE and NoPE lists first, 3 GB and a MemoryError)."""
import json
import subprocess
import sys

from constraints.models.load import MODELS_DIR, bundled_models
from constraints.spec import MAX_NUM_LAYERS
from tests.helpers.bounded_run import assert_one_line_refusal, run_cli_bounded
from tests.helpers.builders import REPO

BILLION = 1_000_000_000


def _deepened(name: str) -> dict:
    """Bundled config `name` with 10^9 layers (in text_config for Llama 4, n_layer for GPT-2 layouts) and a
    30,000-layer hybrid pattern for Nemotron-H."""
    raw = json.loads((MODELS_DIR / f"{name}.json").read_text())
    text = raw.get("text_config", raw)
    for key in ("num_hidden_layers", "n_layer"):
        if key in text:
            text[key] = BILLION
    for key in ("no_rope_layers", "moe_layers", "layer_types"):  # lists then come from the count, as HF builds them
        text.pop(key, None)
    if raw.get("model_type") == "nemotron_h":
        raw["hybrid_override_pattern"] = "M-" * 15_000
    return raw


def test_llama4_with_a_billion_layers_is_refused_naming_the_key(tmp_path):
    path = tmp_path / "llama4.json"
    path.write_text(json.dumps(_deepened("Llama-4-Scout-17B-16E")))
    run = run_cli_bounded("solve", "--model", str(path), "--hardware", "h100-sxm-80gb", "--nodes", "1",
                          "--seq-length", "4096", "--global-batch-size", "64")
    assert_one_line_refusal(run, "num_hidden_layers is 1,000,000,000", f"above the {MAX_NUM_LAYERS} layers")


CHILD = """
import json, resource, sys
resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))
from boundary.errors import ShardplanError
from constraints.models.load import model_from_mapping
for name, raw in json.load(sys.stdin).items():
    try:
        model_from_mapping(raw, name)
        print(name, "accepted")
    except ShardplanError as exc:
        print(name, "refused", str(exc).replace(chr(10), " "))
"""


def test_every_bundled_family_refuses_a_billion_layers_in_bounded_memory():
    configs = {name: _deepened(name) for name in bundled_models()}
    p = subprocess.run([sys.executable, "-c", CHILD], input=json.dumps(configs), capture_output=True, text=True,
                       cwd=REPO, timeout=120)
    assert p.returncode == 0, p.stderr[-500:]
    lines = p.stdout.splitlines()
    assert len(lines) == len(configs) == 26
    for line in lines:
        name, verdict, message = line.split(" ", 2)
        assert verdict == "refused", line
        assert f"{MAX_NUM_LAYERS}" in message and ("1,000,000,000" in message or "1000000000" in message
                                                  or "30,000" in message), line
