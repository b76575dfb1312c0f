"""Safe output writes: only regular files or new paths, never a file the command read, checked before long work,
replaced atomically.

Why: `render -o /dev/null` as root replaced /dev/null with a regular file, `-o FIFO` replaced the FIFO, and
`solve --render` into an unwritable folder failed with a traceback after the whole solve (issue 17). Every
output shardplan writes goes through `atomic_write_text`, which refuses a target that is not a regular file
(a symlink is followed and judged by what it points at, and that file is what gets replaced), and the
commands call `check_output_file` / `check_output_dir` before they start, so a doomed write fails in the
first second, not after minutes of solving or measuring.

Never an input (issue 33: `report check X -o X`, `sweep --report` onto the profile, `render -o` onto a file the script
sources all destroyed what they read): boundary/read.py records every file a command run reads (`reads_recorded`),
and every write here refuses a target that is one of them, judged by (st_dev, st_ino) so a symlink or hard link to
an input is caught too. The commands also name their known inputs to `check_output_file` / `check_output_dir` up
front; files found while reading (a sourced script, an `extends` parent) are caught at the write itself.
"""
from __future__ import annotations

import contextlib
import errno
import os
import shutil
import stat
import tempfile
from pathlib import Path
from typing import Iterable, Iterator, Optional

from boundary.errors import InputRefused
from boundary.read import file_kind, file_read_as


def _resolved(path: str | Path) -> Path:
    """The path a write lands on: symlinks followed (a dangling link's target is created)."""
    return Path(os.path.realpath(path))


def _refuse_non_regular(target: Path, label: str, shown_path: str) -> None:
    try:
        st = os.lstat(target)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise InputRefused(f"{label}: cannot use {shown_path} ({exc.strerror}); give a writable file path") from None
    if not stat.S_ISREG(st.st_mode):
        raise InputRefused(f"{label}: {shown_path} is {file_kind(st.st_mode)}; shardplan writes only regular files "
                           "or new paths, give another path")


def _identity(path: str | Path) -> Optional[tuple[int, int]]:
    """(st_dev, st_ino) of the file `path` names, links followed; None when there is none (a new name)."""
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return None
    return st.st_dev, st.st_ino


def _refuse_input(target: Path, label: str, shown_path: str, inputs: Iterable[str | Path | None] = ()) -> None:
    """Refuse a target that is a file this command read (boundary.read's record) or one of `inputs`."""
    try:
        st = os.stat(target)
    except (OSError, ValueError):
        return  # a new name: nothing there to lose
    read_as = file_read_as(st)
    if read_as is None:
        read_as = next((str(p) for p in inputs if p is not None and _identity(p) == (st.st_dev, st.st_ino)), None)
    if read_as is not None:
        also = "" if read_as == shown_path else f" (as {read_as})"
        raise InputRefused(f"{label}: {shown_path} is a file this command reads{also}; writing there would replace "
                           "the input: write elsewhere")


def _output_target(path: str | Path, label: str, updates_input: bool = False) -> Path:
    """The file a write to `path` lands on, refused unless it is a regular file or a new name, and (unless the write
    `updates_input`) never a file this command read. An empty path is named as such: Path("") is ".", which would be
    refused as a directory."""
    if not str(path).strip():
        raise InputRefused(f"{label}: an empty path; give a file path")
    if "\x00" in str(path):
        raise InputRefused(f"{label}: the path holds a NUL character; give a file path")
    target = _resolved(path)
    _refuse_non_regular(target, label, str(path))
    if not updates_input:
        _refuse_input(target, label, str(path))
    return target


def _probe_directory(directory: Path, label: str) -> None:
    """Create and remove a temp file in `directory`: the one test that holds for root, read-only mounts and ACLs."""
    try:
        fd, tmp = tempfile.mkstemp(dir=directory, prefix=".shardplan-probe.", suffix=".tmp")
    except OSError as exc:
        reason = "permission denied" if exc.errno in (errno.EACCES, errno.EPERM) else exc.strerror
        raise InputRefused(f"{label}: cannot write in {directory} ({reason}); give a writable folder") from None
    os.close(fd)
    os.unlink(tmp)


def _refuse_long_name(path: str | Path, label: str) -> None:
    """A file name over the file system's NAME_MAX (255 bytes on ext4, xfs, btrfs): said now, not as an OSError after
    the work (issue 33: `report -o` with a 300-character name ran the solve, then failed with exit 3)."""
    target = Path(str(path))
    parent = target.parent if str(target.parent) else Path(".")
    try:
        name_max = os.pathconf(parent if parent.is_dir() else ".", "PC_NAME_MAX")
    except (OSError, ValueError):
        name_max = 255
    for part in target.parts:
        if len(os.fsencode(part)) > name_max:
            raise InputRefused(f"{label}: a name of {len(os.fsencode(part)):,} bytes in the path, over this file "
                               f"system's {name_max}; give a shorter name")


def check_output_file(path: str | Path, label: str, inputs: Iterable[str | Path | None] = ()) -> None:
    """Refuse, before any work, an output path that is a directory / FIFO / device / socket, whose folder is missing
    or not writable, whose name is too long, or that is one of `inputs` (the files the command will read: its source,
    model, profile, calibration) or a file it has read already."""
    _refuse_long_name(path, label)
    target = _output_target(path, label)
    _refuse_input(target, label, str(path), inputs)
    parent = target.parent
    if not parent.is_dir():
        raise InputRefused(f"{label}: the folder {parent} does not exist; create it or give another path")
    _probe_directory(parent, label)


def refuse_same_output(paths: dict[str, str | Path | None]) -> None:
    """Refuse two outputs of one command that land on one file (`report check X -o a --trace a`): the second would
    replace the first. `paths` maps each option's label to its path (None: not given)."""
    seen: dict[object, str] = {}
    for label, path in paths.items():
        if path is None:
            continue
        key = _identity(path) or os.path.realpath(path)  # an existing file by inode (hard links too), a new one by name
        if key in seen:
            raise InputRefused(f"{label}: {path} is also {seen[key]}'s file; give each output its own path")
        seen[key] = label


def check_output_dir(path: str | Path, label: str) -> None:
    """Refuse, before any work, an output folder that is a file / FIFO / device, or that cannot be written
    (an absent folder is fine where its nearest existing parent is writable: it will be created)."""
    _refuse_long_name(path, label)
    target = _resolved(path)
    try:
        st = os.stat(target)
    except FileNotFoundError:
        parent = target.parent
        while not parent.exists() and parent != parent.parent:
            parent = parent.parent
        if not parent.is_dir():
            raise InputRefused(f"{label}: {parent} is not a folder; give a folder path") from None
        _probe_directory(parent, label)
        return
    except OSError as exc:
        raise InputRefused(f"{label}: cannot use {path} ({exc.strerror}); give a writable folder") from None
    if not stat.S_ISDIR(st.st_mode):
        raise InputRefused(f"{label}: {path} is {file_kind(st.st_mode) if not stat.S_ISREG(st.st_mode) else 'a file'}"
                           ", not a folder; give a folder path")
    _probe_directory(target, label)


def _umask() -> int:
    umask = os.umask(0o022)
    os.umask(umask)
    return umask


def atomic_write_text(path: str | Path, text: str, label: str | None = None, executable: bool = False,
                      updates_input: bool = False) -> None:
    """Write via a temp file in the target's folder and os.replace, so a Ctrl-C never leaves half a file, and
    only onto a regular file or a new path (symlinks followed).

    mkstemp creates the temp file 0600; the result gets the mode the file had, or a new file's usual
    0666 & ~umask (0644 under umask 022), as `open(path, "w")` would give. `executable` (launch scripts, so
    `./script.sh` works) gives 0777 & ~umask, owner rwx always, set before the rename: never a moment without it.
    A file this command read is refused, unless the write `updates_input`: a file read in order to be rewritten with
    what it held (the cost table `measure` merges into)."""
    label = label or "output file"
    target = _output_target(path, label, updates_input)
    if executable:
        mode = 0o777 & ~_umask() | 0o700
    else:
        try:
            mode = stat.S_IMODE(os.stat(target).st_mode)
        except FileNotFoundError:
            mode = 0o666 & ~_umask()
    tmp = None
    try:  # mkstemp inside the try: a Ctrl-C right after it must not leave its file behind
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name[:200]}.", suffix=".tmp")
        os.fchmod(fd, mode)
        with os.fdopen(fd, "w") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        _refuse_non_regular(target, label, str(path))  # again: a FIFO or device put there while we wrote
        os.replace(tmp, target)
    except BaseException:
        if tmp is not None and os.path.exists(tmp):
            os.unlink(tmp)
        raise


@contextlib.contextmanager
def _interrupts_held():
    """Hold Ctrl-C (SIGINT) and SIGTERM for the body and deliver them after, where the platform can (the main thread
    on POSIX): a handful of renames that must land together or not at all."""
    import signal
    import threading

    held = {signal.SIGINT, signal.SIGTERM}
    can = hasattr(signal, "pthread_sigmask") and threading.current_thread() is threading.main_thread()
    if can:
        signal.pthread_sigmask(signal.SIG_BLOCK, held)
    try:
        yield
    finally:
        if can:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, held)


def atomic_write_folder(directory: str | Path, files: list[tuple[str, str, bool]], remove: set[str] = frozenset()) -> None:
    """Write `files` ((name, text, executable), the last one the index that lists the others, e.g. SUMMARY.md) into
    `directory` together, and remove the names in `remove`: all of it or none. Why: `solve --render` interrupted
    half-way left 17 of 20 scripts and no SUMMARY.md. Everything is first written into a hidden staging folder
    beside them (same file system; Ctrl-C there leaves the folder as it was), then renamed into place with Ctrl-C
    held, the index last. Targets are judged as `atomic_write_text` judges them (regular files or new names only)."""
    directory = _resolved(directory)
    for name, _, _ in files:
        _output_target(directory / name, "output file")
    for name in remove:  # a file this command read is never removed either
        _refuse_input(directory / name, "output folder", str(directory / name))
    staging = None
    try:
        staging = Path(tempfile.mkdtemp(dir=directory, prefix=".shardplan-staging-"))
        for name, text, executable in files:
            atomic_write_text(staging / name, text, executable=executable)
        with _interrupts_held():
            for name, _, _ in files:
                os.replace(staging / name, _resolved(directory / name))
            for name in remove:
                (directory / name).unlink(missing_ok=True)
    finally:
        if staging is not None:
            shutil.rmtree(staging, ignore_errors=True)


def refuse_overwriting_input(source: str | Path, output: str | Path, label: str) -> None:
    """Refuse an output path that names the input file itself (symlinks and hard links followed): `render train.sh -o
    train.sh` replaced the user's own script with the rendered one."""
    _refuse_input(_resolved(output), label, str(output), [source])


@contextlib.contextmanager
def folder_locked(directory: str | Path) -> Iterator[None]:
    """Hold an exclusive `fcntl.flock` on the folder `directory` itself for the block: two commands writing one folder
    (two `solve --render DIR` at once) take turns, so each reads the folder's index and writes its files with no
    other writer between (issue 33: two at once left scripts that SUMMARY.md did not list). Locking the folder's own
    descriptor leaves no lock file behind; the kernel drops the lock when the process dies, so a killed writer never
    leaves the folder locked. Where flock is missing (Windows) the block runs unlocked."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX
        yield
        return
    try:
        fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise InputRefused(f"output folder: cannot open {directory} to lock it ({exc.strerror}); give a writable "
                           "folder") from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the lock
