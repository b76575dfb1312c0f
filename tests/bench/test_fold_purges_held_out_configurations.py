"""A cross-validation fold never fits on a row that publishes one of its held-out configurations
(bench.cross_validate.training_rows): re-measured configurations would otherwise carry the held-out figure into the
fit through another release or another publication."""
import pytest

from bench.cross_validate import GROUPINGS, training_rows
from bench.release_spread import configuration
from bench.run_slices import is_headline, throughput_cases


@pytest.fixture(scope="module")
def cases():
    return throughput_cases()


@pytest.mark.parametrize("grouping", sorted(GROUPINGS))
def test_no_fold_fits_on_a_held_out_configuration(cases, grouping):
    key = GROUPINGS[grouping]
    for group in {key(c) for c in cases}:
        held = {configuration(c) for c in cases if key(c) == group}
        train = training_rows(cases, key, group)
        assert train, group
        assert all(is_headline(c) and key(c) != group and configuration(c) not in held for c in train), group


def test_release_fold_drops_the_other_releases_measurements_of_its_configurations(cases):
    # docs/performance-summary-archive.md @067f987d: Qwen3-30B-A3B on 8 GB200, MXFP8, GBS 512, EP 8, MBS 4 is published
    # in 26.04 (MBR-144) and re-measured in 26.04.01 (MBR-098) and 26.06 (MBR-048); the model card measures it too
    train = {c.id for c in training_rows(cases, GROUPINGS["release"], "MBR 26.04")}
    assert not {"MBR-098", "MBR-048", "MBR-008", "MBCARD-500"} & train
    # another Qwen3-30B-A3B configuration the 26.04 table does not hold stays in the fit
    assert "MBCARD-499" in train


def test_source_fold_drops_twins_in_other_publications(cases):
    # NeMo 24.07 and 24.12 publish the same GPT3-20B H100 FP8 configuration (NEMO2407-295, NEMO2412-307); the model
    # card's DeepSeek-V3 GB300 row (MBCARD-474) re-measures the performance summary's MBR-001 configuration
    by_source = GROUPINGS["source"]
    assert "NEMO2407-295" not in {c.id for c in training_rows(cases, by_source, "NEMO2412")}
    assert "NEMO2407-296" not in {c.id for c in training_rows(cases, by_source, "NEMO2412")}
    mbr_fit = {c.id for c in training_rows(cases, by_source, "MBR")}
    assert "MBCARD-474" not in mbr_fit and "MBCARD-499" in mbr_fit
