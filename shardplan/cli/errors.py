"""How unusable input leaves a command: `error: <one line>` on stderr and exit status 2 (shardplan/cli/main.py's contract).

Why a module of its own: the group in cli.py converts a ShardplanError from any subcommand, and a command module
(cli_render.py) converts its own too, so it keeps that contract when called alone (click's test runner, an embedding
program); both need the same exception, and a command module importing cli.py would import itself back.
"""
from __future__ import annotations

from contextlib import contextmanager

import click

from boundary.errors import ArgumentError, InternalError, ShardplanError
from boundary.show import bounded_line


class UnusableInput(click.ClickException):
    """A ShardplanError on its way out of a command: `error: <line>` on stderr, exit status 2."""

    exit_code = 2

    def show(self, file=None) -> None:
        click.echo(f"error: {bounded_line(self.message)}", err=True)


def first_line(exc: BaseException) -> str:
    """The one line a message shows: its first line, or the exception's type when it has none."""
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__


# the API arguments whose command-line option is not `--` + the name with dashes
OPTION_OF_ARGUMENT = {"max_time_s": "--max-time", "time_limit_s": "--time-limit", "trials_dir": "-o", "render_dir": "--render",
                      "top": "--top", "source": "FILE", "logs": "LOG"}


def option_line(exc: ArgumentError) -> str:
    """An API argument error as the command line's user reads it: `--seq-length: ...`, not `seq_length: ...`."""
    line = first_line(exc)
    name = exc.argument
    if not name or not line.startswith(name + ":"):
        return line
    return OPTION_OF_ARGUMENT.get(name, "--" + name.replace("_", "-")) + line[len(name):]


@contextmanager
def unusable_input():
    """Inside a command: a ShardplanError becomes UnusableInput (exit status 2, one line)."""
    try:
        yield
    except InternalError:  # a bug the API's edge wrapped: shardplan/cli/main.py reports it, exit 3, not unusable input
        raise
    except ArgumentError as exc:
        raise UnusableInput(option_line(exc)) from None
    except ShardplanError as exc:
        raise UnusableInput(first_line(exc)) from None
