"""The proposer's configuration (how hints are made, how long the loop may run) and its error.

Why apart from loop.py: the `solve` command's options build a ProposerConfig at start-up, and loop.py imports
OR-Tools, which `shardplan --help` must not load.
"""
from __future__ import annotations

from typing import Literal, Optional

from pydantic import BaseModel, ConfigDict, Field

from boundary.errors import ShardplanError


class ProposerConfigError(ShardplanError):
    """A proposer configuration that cannot run (one line: the option and the fix)."""


class ProposerConfig(BaseModel):
    """How hints are made and how long the loop may run (the final full solve is outside the budget)."""

    model_config = ConfigDict(extra="forbid")
    kind: Literal["none", "rules", "llm"] = Field("rules", description="none: plain solve; rules: built-in, offline")
    base_url: Optional[str] = Field(None, description="OpenAI-compatible API root, e.g. http://localhost:8000/v1")
    model: Optional[str] = Field(None, description="model name the endpoint serves")
    api_key_env: str = Field("OPENAI_API_KEY", description="environment variable holding the key; unset = no key")
    timeout_s: float = Field(60.0, gt=0, le=3600, description="per chat call: connect, headers, body and retries in all")
    retries: int = Field(2, ge=0, le=10, description="extra attempts after a 5xx, 429 or timeout")
    backoff_s: float = Field(1.0, ge=0, le=600, description="first retry wait; doubles per retry")
    max_rounds: int = Field(3, ge=0, le=50, description="propose/solve rounds before the final solve")
    patience: int = Field(1, ge=1, description="stop after this many rounds without a better step time")
    max_subsearches_per_round: int = Field(4, ge=1, le=64)
    subsearch_k: int = Field(3, ge=1, description="answers kept per sub-search (the ledger)")
    budget_s: float = Field(120.0, gt=0, le=86400, description="wall-clock seconds for all rounds together")
    compare_unhinted: bool = Field(True, description="re-run the unhinted solve when the final one is not proven")
