"""A note about one line of a launch script, kept as data (the line a number) until it is shown.

Why: extract_argv lists where bash or sbatch reads a line otherwise than it looks (`LaunchCommand.misread`) in line
order, and several modules write those notes (shell_continuation, sbatch_directives, shell_interp for child scripts).
Sorting the shown text would mean parsing `line N` back out of it; a note carries its line as a number and becomes
text once, when extract_argv returns.
"""
from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class LineNote(BaseModel):
    """`<where>line <line>: <message>` once shown (str)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    line: int = Field(ge=1, description="the script line the note is about (1-based, as editors count)")
    message: str = Field(description="what bash or sbatch does with that line, and the fix")
    where: str = Field("", description="'file:' of a sourced or child script; '' for the script itself")

    def __str__(self) -> str:
        return f"{self.where}line {self.line}: {self.message}"


__all__ = ["LineNote"]
