"""A STACK:VERSION names a month, and the month decides the features (constraints/software/generations.yaml).

The facts asserted are published: Megatron-LM v2.5 (tag, 2021-08) has no --use-flash-attn and no --transformer-impl
(added by NVIDIA/Megatron-LM d693034e and 3499542e in 2022-12); DeepEP's flex dispatcher arrived in 0d389f5e
(2025-02), after NeMo 24.07 and before Megatron-Core 0.12.0 (tag core_v0.12.0, 2025-04); Hybrid-EP in 3df20090
(2025-11).
"""
import pytest

from constraints.software.generation import SoftwareError, newest, resolve
from constraints.software.versions import software_of_versions


def test_a_2021_megatron_lm_has_neither_flash_attention_nor_transformer_engine():
    gen = resolve("megatron-lm:2021-04")
    assert gen.month == "2021-04"
    for feature in ("flash_attention", "transformer_engine", "sequence_parallel", "distributed_optimizer", "overlap_grad_reduce"):
        assert not gen.has(feature)


def test_containers_are_named_by_their_year_and_month():
    assert resolve("nemo:24.07").month == "2024-07"
    assert resolve("megatron-bridge:26.02.01").month == "2026-02"
    assert resolve("nemo:26.08.rc5").month == "2026-08"
    assert resolve("nemo:25.04.rc2").month == "2025-04"


def test_nemo_24_07_has_transformer_engine_but_not_deepep():
    gen = resolve("nemo:24.07")
    assert gen.has("transformer_engine") and gen.has("flash_attention") and gen.has("moe_grouped_gemm")
    assert not gen.has("deepep") and not gen.has("hybridep") and not gen.has("ep_comm_overlap")


def test_megatron_core_versions_take_their_tag_month():
    assert resolve("megatron-core:0.12.0").month == "2025-04"
    assert resolve("megatron-core:0.12.0").has("deepep") and not resolve("megatron-core:0.12.0").has("hybridep")
    assert resolve("megatron-core:0.8.0").month == "2024-08"
    between = resolve("megatron-core:0.13.1")  # not tagged in the table: the newest listed below it
    assert between.month == "2025-04" and "0.12.0" in between.how


def test_the_default_is_the_newest_generation_and_it_has_every_feature():
    gen = newest()
    assert gen.software == "megatron-bridge:26.08"
    assert gen.missing() == []


@pytest.mark.parametrize("text, words", [
    ("megatron", ["STACK:VERSION"]),
    ("foo:1.0", ["unknown stack", "megatron-lm"]),
    ("nemo:latest", ["cannot place", "YY.MM"]),
    ("megatron-core:0.1.0", ["oldest listed 0.4.0"]),
    ("megatron-lm:2021-13", ["cannot place"]),
])
def test_a_value_it_cannot_place_is_refused_with_the_fix(text, words):
    with pytest.raises(SoftwareError) as exc:
        resolve(text)
    message = str(exc.value)
    assert "\n" not in message and all(w in message for w in words)


def test_a_log_states_its_software_by_the_versions_it_prints():
    assert software_of_versions({"megatron-core": "0.12.0", "torch": "2.6.0"}) == "megatron-core:0.12.0"
    assert software_of_versions({"nemo": "24.07"}) == "nemo:24.07"
    # an NGC PyTorch container banner names torch's container, not the Megatron it runs: no software
    assert software_of_versions({"container": "24.01", "torch": "2.2.0a0"}) is None
