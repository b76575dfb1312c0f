"""Text leaving the program on stdout / stderr, with every terminal control character and escape sequence removed.

Why: a model name, a path or a script's value can carry ESC sequences (`\\x1b[2J` clears the screen, `\\x1b]0;...\\x07`
sets the window title, `\\x1b]8;;...` plants a hyperlink) or a carriage return that overwrites what a line said, and
shardplan echoes such values in tables, notes and error lines (issue 33). Escaping at each call site misses the
next one, so `main` wraps the process's two text streams once (`control_free_streams`): whatever is written to them
passes `strip_control`. Removed: ECMA-48 escape sequences whole (CSI `ESC [ ... final`, OSC / DCS / SOS / PM / APC
strings up to their terminator, two-character `ESC x`), their 8-bit C1 forms (U+0080-U+009F, CSI U+009B, OSC
U+009D), and every other C0 control but tab and newline (carriage return and backspace included: both rewrite what
the terminal shows) and DEL. JSON output is unchanged: json.dumps already writes control characters as `\\u001b`.
The progress spinner and bar, which draw with control sequences of their own and print no user value, write to the
stream underneath (`unfiltered`).
"""
from __future__ import annotations

import contextlib
import io
import re
import sys
from typing import Iterator, TextIO

# ECMA-48 (5th ed., 1991) sections 5.4 (control sequences) and 5.6 (control strings); C0 / C1 sets of section 5.3
_SEQUENCE = re.compile(
    r"(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]?"  # CSI: parameters, intermediates, final byte (cut short: removed as far as it goes)
    r"|(?:\x1b[\]PX^_]|[\x90\x98\x9d\x9e\x9f])[^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)?"  # OSC / DCS / SOS / PM / APC strings
    r"|\x1b[ -/]*[0-~]?"  # any other escape: ESC, intermediates, final byte
    r"|[\x00-\x08\x0b-\x1f\x7f-\x9f]"  # the other C0 controls (tab and newline kept), DEL, C1
)


def strip_control(text: str) -> str:
    """`text` without terminal control characters and escape sequences; tab and newline kept."""
    return _SEQUENCE.sub("", text) if not text.isprintable() else text


class ControlFreeStream(io.TextIOBase):
    """A text stream that writes `strip_control(text)` to the stream it wraps; everything else is the wrapped one's."""

    def __init__(self, inner: TextIO) -> None:
        self.unfiltered = inner

    def write(self, text: str) -> int:
        self.unfiltered.write(strip_control(text))
        return len(text)

    def flush(self) -> None:
        self.unfiltered.flush()

    def isatty(self) -> bool:
        return self.unfiltered.isatty()

    def fileno(self) -> int:
        return self.unfiltered.fileno()

    def writable(self) -> bool:
        return True

    @property
    def encoding(self) -> str:  # click compares it with the terminal's before writing text (click._compat)
        return self.unfiltered.encoding

    @property
    def errors(self) -> str | None:
        return getattr(self.unfiltered, "errors", None)


def unfiltered(stream: TextIO) -> TextIO:
    """The stream under a ControlFreeStream (for a spinner's own control sequences), or `stream` itself."""
    return getattr(stream, "unfiltered", stream)


@contextlib.contextmanager
def control_free_streams() -> Iterator[None]:
    """Within the block, sys.stdout and sys.stderr strip control characters (restored after, flushed first)."""
    saved = sys.stdout, sys.stderr
    if not isinstance(sys.stdout, ControlFreeStream):
        sys.stdout = ControlFreeStream(sys.stdout)
    if not isinstance(sys.stderr, ControlFreeStream):
        sys.stderr = ControlFreeStream(sys.stderr)
    try:
        yield
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        sys.stdout, sys.stderr = saved
