"""The one reader of user files: a regular, readable file under a stated size, as UTF-8 text.

Why not `Path.read_text()`: it opens a FIFO and waits forever for a writer, reads /dev/zero until memory
runs out, raises IsADirectoryError / PermissionError / a name-too-long OSError as tracebacks, and reads a
10 MB file that then takes minutes to parse (issue 17). Here the file is opened non-blocking (so a FIFO
cannot stall the open), checked with fstat on the opened descriptor (so a symlink is judged by what it
points at, and nothing can be swapped between check and read), and read up to its limit + 1 byte.
"""
from __future__ import annotations

import contextlib
import errno
import functools
import os
import stat
from pathlib import Path
from typing import Iterator, NamedTuple, Optional

from boundary.errors import InputRefused
from boundary.limits import human_bytes, max_bytes

_NOT_REGULAR = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def file_kind(mode: int) -> str:
    """What a non-regular file is, in words."""
    for test, words in _NOT_REGULAR:
        if test(mode):
            return words
    return "not a regular file"


def _open_error(label: str, exc: OSError, expected: str) -> InputRefused:
    reason = {
        errno.ENOENT: "no such file",
        errno.EACCES: "not readable (permission denied)",
        errno.EPERM: "not readable (operation not permitted)",
        errno.ENAMETOOLONG: "the path is too long for this system",
        errno.ELOOP: "too many levels of symbolic links",
        errno.ENOTDIR: "a part of the path is not a directory",
        errno.EISDIR: "a directory",
    }.get(exc.errno, exc.strerror or type(exc).__name__)
    return InputRefused(f"{label}: cannot read it ({reason}); give {expected}")


# The files this command run has read, (st_dev, st_ino) -> the path as given: consulted by boundary/write.py so no
# output replaces an input. None outside `reads_recorded` (then nothing is recorded: a long-lived program calling
# the API would otherwise refuse, hours later, to write a file it read once). A module global, not a ContextVar: a
# reader in a worker thread (which starts with an empty context) must land in the same record.
_files_read: Optional[dict[tuple[int, int], str]] = None


@contextlib.contextmanager
def reads_recorded() -> Iterator[dict[tuple[int, int], str]]:
    """Record every file read inside the block (one command run: the CLI's command, an API call that writes). Nested
    blocks share the outermost record, so a write late in a command still knows what its first step read."""
    global _files_read
    if _files_read is not None:
        yield _files_read
        return
    _files_read = {}
    try:
        yield _files_read
    finally:
        _files_read = None


@contextlib.contextmanager
def reads_unrecorded() -> Iterator[None]:
    """Reads inside the block are not recorded: a writer reading its own earlier outputs (solve --render's manifest
    and the files it lists, templates/render_manifest.py) reads what it is about to replace, not an input of the
    command; recorded, they made a second render into a folder refuse its own SUMMARY.md."""
    global _files_read
    saved, _files_read = _files_read, None
    try:
        yield
    finally:
        _files_read = saved


def recording_reads(fn):
    """Decorator: run `fn` inside `reads_recorded` (an API function that writes, so its write knows what it read)."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        with reads_recorded():
            return fn(*args, **kwargs)
    return wrapper


def note_read(path: str | Path, st: os.stat_result | None = None) -> None:
    """Record `path` as read by this command run (a reader outside `read_bytes`, or one answering from a cache, says
    so here). Identity is (st_dev, st_ino): a symlink or a hard link to the file is the same file."""
    record = _files_read
    if record is None:
        return
    try:
        st = st or os.stat(path)
    except (OSError, ValueError):
        return
    record.setdefault((st.st_dev, st.st_ino), str(path))


def file_read_as(st: os.stat_result) -> Optional[str]:
    """The path this command run read the file `st` describes under, or None when it read no such file."""
    record = _files_read
    return None if record is None else record.get((st.st_dev, st.st_ino))


def _short(path: str, limit: int = 120) -> str:
    return path if len(path) <= limit else f"{path[:limit]}... ({len(path)} characters)"


def _open_regular(path: str, kind: str, label: str, expected: str) -> tuple[int, os.stat_result]:
    """(descriptor, its fstat) of a regular file, opened non-blocking (a FIFO cannot stall the open) and judged on the
    opened descriptor (no check-then-open race); the caller closes the descriptor."""
    if "\x00" in path:
        raise InputRefused(f"{label}: the path holds a NUL character; give a {kind} file path")
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise _open_error(label, exc, expected) from None
    with _closed_on_failure(fd, label, expected):
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise InputRefused(f"{label}: {file_kind(st.st_mode)}, not a regular file; give {expected}")
    note_read(path, st)
    return fd, st


@contextlib.contextmanager
def _closed_on_failure(fd: int, label: str, expected: str):
    """Close `fd` when the block fails (an OSError becomes the one-line refusal), so no failure leaks a descriptor."""
    try:
        yield
    except OSError as exc:
        os.close(fd)
        raise _open_error(label, exc, expected) from None
    except BaseException:
        os.close(fd)
        raise


def read_bytes(path: str | Path, kind: str, label: str | None = None, limit_bytes: int | None = None,
               expected: str | None = None) -> bytes:
    """The bytes of a regular file of at most `limit_bytes` (default: the limit for `kind`).

    `kind` selects the limit (`boundary.limits.MAX_TEXT_BYTES`) and names the file in messages; `label`
    starts each message (default: the path, shortened); `expected` is the fix (default: `a <kind> file`)."""
    path = str(path)
    label = label or _short(path)
    expected = expected or f"a {kind} file"
    limit = max_bytes(kind) if limit_bytes is None else limit_bytes
    fd, st = _open_regular(path, kind, label, expected)
    try:
        if st.st_size > limit:
            raise InputRefused(f"{label}: {st.st_size:,} bytes, over the {human_bytes(limit)} limit for a {kind} "
                               f"file; give {expected}")
        chunks, total = [], 0
        while total <= limit:  # a file growing while read (or lying in st_size) still stops at limit + 1
            chunk = os.read(fd, min(1 << 20, limit + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
        if total > limit:
            raise InputRefused(f"{label}: over the {human_bytes(limit)} limit for a {kind} file; give {expected}")
        return b"".join(chunks)
    except OSError as exc:
        raise _open_error(label, exc, expected) from None
    finally:
        os.close(fd)


def read_text(path: str | Path, kind: str, label: str | None = None, limit_bytes: int | None = None,
              expected: str | None = None) -> str:
    """The UTF-8 text of a regular file (see `read_bytes`); a NUL byte or invalid UTF-8 is refused, since
    no recipe, model, profile, script or table shardplan reads is binary."""
    data = read_bytes(path, kind, label, limit_bytes, expected)
    label = label or _short(str(path))
    expected = expected or f"a {kind} file"
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputRefused(f"{label}: not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start}); "
                           f"give {expected}") from None
    nul = text.find("\x00")
    if nul >= 0:
        raise InputRefused(f"{label}: a binary file (NUL byte at offset {nul}); give {expected}")
    return text


def is_regular_file(path: str | Path) -> bool:
    """`Path.is_file()` that answers False instead of raising on a too-long or otherwise unusable name
    (issue 17: a 300-character model name raised OSError)."""
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except (OSError, ValueError):
        return False


class TextLine(NamedTuple):
    """One line of a streamed text file: its 1-based `number`, its `text` without the line break (None when the
    line was longer than the cap and skipped), and whether it `ended` with a line break (False only for a last line
    cut off mid-write)."""

    number: int
    text: Optional[str]
    ended: bool


def iter_text_lines(path: str | Path, kind: str, max_line_bytes: int, label: str | None = None,
                    expected: str | None = None) -> Iterator[TextLine]:
    """The lines of a regular, readable file, streamed: for inputs with no whole-file size cap (a training log of
    gigabytes), read in 1 MiB buffers so memory stays at one buffer plus one line.

    Why here: it makes the same checks `read_bytes` makes (a NUL-free path, a non-blocking open so a FIFO cannot
    stall it, fstat on the opened descriptor refusing directories, FIFOs, devices and sockets), then streams instead
    of reading whole. A line over `max_line_bytes` is skipped (yielded with text None) without holding it in memory.
    Bytes that are not UTF-8 become U+FFFD: a log is machine output that a crashed writer may leave half a
    character of, and one bad byte must not hide a million good lines."""
    path = str(path)
    label = label or _short(path)
    expected = expected or f"a {kind} file"
    fd, _ = _open_regular(path, kind, label, expected)
    with _closed_on_failure(fd, label, expected):
        stream = os.fdopen(fd, "rb", buffering=1 << 20, closefd=False)
    try:
        number = 0
        while True:
            try:
                raw = stream.readline(max_line_bytes + 1)
            except OSError as exc:
                raise _open_error(label, exc, expected) from None
            if not raw:
                return
            number += 1
            ended = raw.endswith(b"\n")
            if not ended and len(raw) > max_line_bytes:  # too long: drop the rest of it, a buffer at a time
                while True:
                    rest = stream.readline(1 << 20)
                    if not rest or rest.endswith(b"\n"):
                        ended = bool(rest)
                        break
                yield TextLine(number, None, ended)
                continue
            body = raw[:-1] if ended else raw
            if body.endswith(b"\r"):
                body = body[:-1]
            yield TextLine(number, body.decode("utf-8", errors="replace"), ended)
    finally:
        stream.close()
        os.close(fd)
