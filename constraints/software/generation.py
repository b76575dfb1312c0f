"""`STACK:VERSION` -> a `Generation`: the month the named release belongs to and the features it has.

Why months: every feature the projection prices landed in Megatron-LM at a dated commit, and every release the rows
name is dated, so one timeline (generations.yaml) answers "does this release have X" for every stack without a
hand-made table per release. NVIDIA's NeMo and Megatron-Bridge containers are named YY.MM, the year and month of the
release (NVIDIA framework containers' versioning, https://docs.nvidia.com/deeplearning/frameworks/support-matrix/
index.html), so `nemo:24.07` is 2024-07; Megatron-Core versions take their tag's month; a month (`megatron-lm:2021-04`)
is itself. A container ships the Megatron-Core of its month or a little earlier, so a feature that landed in the
container's own month may be missing from it: the month is the generation's latest possible state, said in the docs.
"""
from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path
from typing import Optional

import yaml
from pydantic import BaseModel, ConfigDict, Field

from boundary.errors import ShardplanError
from boundary.show import shown

GENERATIONS_PATH = Path(__file__).resolve().parent / "generations.yaml"
# bench/data/COLUMNS.md `software`: the stacks a value may name
STACKS = ("megatron-lm", "megatron-core", "nemo", "megatron-bridge", "megatron-deepspeed", "torchtitan", "automodel",
          "llm-foundry", "primus", "other")
# PyTorch-native trainers (FSDP, no Megatron): torchtitan, NeMo AutoModel, MosaicML LLM Foundry (Composer + torch FSDP)
TORCH_NATIVE_STACKS = ("torchtitan", "automodel", "llm-foundry")
CONTAINER_STACKS = ("nemo", "megatron-bridge")
MONTH = re.compile(r"(\d{4})-(0[1-9]|1[0-2])")
CONTAINER = re.compile(r"v?(\d{2})\.(0[1-9]|1[0-2])(?:\.\d+)?(?:\.?rc\d+)?")
VERSION = re.compile(r"v?(\d+)\.(\d+)(?:\.(\d+))?(?:rc\d+)?")


class SoftwareError(ShardplanError):
    """A software value shardplan cannot read or follow (one line: the value, what is wrong, the fix)."""


class Feature(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    since: str = Field(pattern=MONTH.pattern, description="the month it landed (YYYY-MM)")
    source: str = Field(min_length=1)


class Timeline(BaseModel):
    """generations.yaml."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    features: dict[str, Feature]
    megatron_core_releases: dict[str, str]
    newest: str


class Generation(BaseModel):
    """One named release placed on the timeline."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    software: str = Field(description="STACK:VERSION as given, normalised (lower-case stack)")
    stack: str
    version: str
    month: str = Field(description="YYYY-MM the release belongs to")
    how: str = Field(description="how the month was read from the version")
    features: frozenset[str] = Field(description="the features (generations.yaml) this generation has")

    def has(self, feature: str) -> bool:
        return feature in self.features

    @property
    def torch_native(self) -> bool:
        return self.stack in TORCH_NATIVE_STACKS

    def missing(self) -> list[str]:
        """The timeline's features this generation lacks, oldest first."""
        timeline = load_timeline()
        return sorted((f for f in timeline.features if f not in self.features), key=lambda f: timeline.features[f].since)


@lru_cache(maxsize=1)
def load_timeline(path: Path = GENERATIONS_PATH) -> Timeline:
    """The bundled timeline (package data; a missing file is a broken install)."""
    return Timeline.model_validate(yaml.safe_load(path.read_text()))


def _version_key(text: str) -> Optional[tuple[int, int, int]]:
    m = VERSION.fullmatch(text)
    return (int(m.group(1)), int(m.group(2)), int(m.group(3) or 0)) if m else None


def _core_month(version: str, timeline: Timeline) -> tuple[str, str]:
    """(month, how) of a Megatron-Core version: its tag's month, or the month of the newest listed version below it."""
    key = _version_key(version)
    listed = sorted((k, month) for k, month in ((_version_key(v), m) for v, m in timeline.megatron_core_releases.items()))
    below = [(k, month) for k, month in listed if k <= key] if key else []
    if not below:
        oldest = ".".join(map(str, listed[0][0]))
        raise SoftwareError(f"software megatron-core:{shown(version)}: not a Megatron-Core version on the timeline "
                            f"(oldest listed {oldest}); give X.Y.Z, or the month as megatron-lm:YYYY-MM")
    k, month = below[-1]
    listed_as = ".".join(map(str, k))
    return month, f"Megatron-Core {listed_as} tagged {month}" + ("" if k == key else f" (the newest listed at or below {version})")


def resolve(text: str) -> Generation:
    """`STACK:VERSION` -> its Generation, or SoftwareError naming the fix."""
    raw = (text or "").strip()
    stack, sep, version = raw.partition(":")
    stack, version = stack.strip().lower(), version.strip()
    if not sep or not version:
        raise SoftwareError(f"software {shown(raw)}: write STACK:VERSION, e.g. megatron-bridge:26.08, nemo:24.07, "
                            "megatron-core:0.12.0 or megatron-lm:2021-04")
    if stack not in STACKS:
        raise SoftwareError(f"software {shown(raw)}: unknown stack {shown(stack)}; use one of {', '.join(STACKS)}")
    timeline = load_timeline()
    month_match = MONTH.fullmatch(version)
    container = CONTAINER.fullmatch(version.lower())
    if month_match:
        month, how = version, "the month given"
    elif stack in CONTAINER_STACKS and container:
        month, how = f"20{container.group(1)}-{container.group(2)}", "container release YY.MM"
    elif stack == "megatron-core" and VERSION.fullmatch(version):
        month, how = _core_month(version, timeline)
    else:
        raise SoftwareError(f"software {shown(raw)}: cannot place version {shown(version)} of {stack} in time; give a "
                            "container release YY.MM (nemo, megatron-bridge), a Megatron-Core X.Y.Z, or the month "
                            f"as {stack}:YYYY-MM")
    features = frozenset(name for name, f in timeline.features.items() if f.since <= month)
    return Generation(software=f"{stack}:{version}", stack=stack, version=version, month=month, how=how, features=features)


def newest() -> Generation:
    """The default generation: the newest release the project knows (generations.yaml `newest`)."""
    return resolve(load_timeline().newest)


def generation_or_newest(text: Optional[str]) -> tuple[Generation, str]:
    """(the generation, where it came from: 'given' or 'default: the newest generation')."""
    if text is None or not str(text).strip():
        return newest(), "default: the newest generation"
    return resolve(str(text)), "given"
