"""Click options for the proposer, shared as one decorator (sqlite-utils style), and their config.

Wiring into a command:
    @proposer_options
    def solve_command(..., proposer, llm_base_url, llm_model, llm_api_key_env, llm_timeout, proposer_rounds): ...
        config = config_from_options(proposer=proposer, llm_base_url=llm_base_url, ...)
"""
from __future__ import annotations

from typing import Optional

import click
from pydantic import ValidationError

from boundary.show import bounded_line
from solver.proposer.config import ProposerConfig
from solver.proposer.summary import HintReport, format_hint_report

__all__ = ["ProposerOptionError", "config_from_options", "format_hint_report", "proposer_options", "HintReport"]


class ProposerOptionError(click.ClickException):
    """One-line error naming the option and the fix (exit status 2, like the other solve errors)."""

    exit_code = 2

    def show(self, file=None) -> None:
        click.echo(f"error: {bounded_line(self.message)}", err=True)


def proposer_options(fn):
    """Adds --proposer, --llm-base-url, --llm-model, --llm-api-key-env, --llm-timeout, --proposer-rounds."""
    options = [
        click.option("--proposer", type=click.Choice(["none", "rules", "llm"]), default="rules", show_default=True,
                     help="hints that steer the search: built-in rules (offline), an LLM, or none; the answer is always "
                          "the full solve, re-verified"),
        click.option("--llm-base-url", default=None, metavar="URL",
                     help="OpenAI-compatible API root, e.g. http://localhost:8000/v1 (vLLM, llama.cpp, Ollama)"),
        click.option("--llm-model", default=None, metavar="NAME", help="model name the endpoint serves"),
        click.option("--llm-api-key-env", default="OPENAI_API_KEY", show_default=True, metavar="VAR",
                     help="environment variable holding the API key (unset = no key, for local servers)"),
        click.option("--llm-timeout", type=click.FloatRange(min=0.1), default=60.0, show_default=True,
                     help="seconds per LLM call in all (connect, headers, body, retries), within the proposer's budget"),
        click.option("--proposer-rounds", type=click.IntRange(min=0, max=50), default=3, show_default=True,
                     help="propose/solve rounds before the final solve"),
    ]
    for opt in reversed(options):
        fn = opt(fn)
    return fn


def check_url_parts(url: str) -> None:
    """The URL's host and port as urllib will read them when the first request goes out: a port out of range or not a
    number, an unclosed IPv6 bracket or no host failed there as an internal error (exit 3) or as three retries."""
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(url)
        port, host = parts.port, parts.hostname
    except ValueError as exc:
        raise ProposerOptionError(f"--llm-base-url: {exc} in the URL; give e.g. http://localhost:8000/v1") from None
    if not host:
        raise ProposerOptionError("--llm-base-url: the URL names no host; give e.g. http://localhost:8000/v1")
    if port == 0:
        raise ProposerOptionError("--llm-base-url: port 0 is no server's port; give the port the endpoint listens on")


def config_from_options(proposer: str = "rules", llm_base_url: Optional[str] = None, llm_model: Optional[str] = None,
                        llm_api_key_env: str = "OPENAI_API_KEY", llm_timeout: float = 60.0, proposer_rounds: int = 3,
                        **_ignored) -> ProposerConfig:
    """ProposerConfig from the option values; extra keyword arguments (the command's other options) are ignored."""
    if proposer == "llm":
        missing = [name for name, v in (("--llm-base-url URL", llm_base_url), ("--llm-model NAME", llm_model)) if not v]
        if missing:
            raise ProposerOptionError(f"--proposer llm: also give {' and '.join(missing)} (or use --proposer rules, offline)")
        if not llm_base_url.startswith(("http://", "https://")):
            raise ProposerOptionError(f"--llm-base-url {llm_base_url!r}: give an http(s) URL, e.g. http://localhost:8000/v1")
        check_url_parts(llm_base_url)
    try:
        return ProposerConfig(kind=proposer, base_url=llm_base_url, model=llm_model, api_key_env=llm_api_key_env,
                              timeout_s=llm_timeout, max_rounds=proposer_rounds)
    except ValidationError as exc:
        err = exc.errors()[0]
        raise ProposerOptionError(f"proposer option {'.'.join(map(str, err['loc']))}: {err['msg']}") from None
