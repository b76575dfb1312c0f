"""Safe output writes: only regular files or new paths, checked before long work, replaced atomically.

Why: `render -o /dev/null` as root replaced /dev/null with a regular file, `-o FIFO` replaced the FIFO, and
`solve --render` into an unwritable folder failed with a traceback after the whole solve (issue 17). Every
output shardplan writes goes through `atomic_write_text`, which refuses a target that is not a regular file
(a symlink is followed and judged by what it points at, and that file is what gets replaced), and the
commands call `check_output_file` / `check_output_dir` before they start, so a doomed write fails in the
first second, not after minutes of solving or measuring.
"""
from __future__ import annotations

import contextlib
import errno
import os
import shutil
import stat
import tempfile
from pathlib import Path

from boundary.errors import InputRefused
from boundary.read import file_kind


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


def _output_target(path: str | Path, label: str) -> Path:
    """The file a write to `path` lands on, refused unless it is a regular file or a new name. An empty path is named
    as such: Path("") is ".", which would be refused as a directory."""
    if not str(path).strip():
        raise InputRefused(f"{label}: an empty path; give a file path")
    target = _resolved(path)
    _refuse_non_regular(target, label, str(path))
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


def check_output_file(path: str | Path, label: str) -> None:
    """Refuse, before any work, an output path that is a directory / FIFO / device / socket, or whose folder
    is missing or not writable."""
    target = _output_target(path, label)
    parent = target.parent
    if not parent.is_dir():
        raise InputRefused(f"{label}: the folder {parent} does not exist; create it or give another path")
    _probe_directory(parent, label)


def check_output_dir(path: str | Path, label: str) -> None:
    """Refuse, before any work, an output folder that is a file / FIFO / device, or that cannot be written
    (an absent folder is fine where its nearest existing parent is writable: it will be created)."""
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


def atomic_write_text(path: str | Path, text: str, label: str | None = None, executable: bool = False) -> None:
    """Write via a temp file in the target's folder and os.replace, so a Ctrl-C never leaves half a file, and
    only onto a regular file or a new path (symlinks followed).

    mkstemp creates the temp file 0600; the result gets the mode the file had, or a new file's usual
    0666 & ~umask (0644 under umask 022), as `open(path, "w")` would give. `executable` (launch scripts, so
    `./script.sh` works) gives 0777 & ~umask, owner rwx always, set before the rename: never a moment without it."""
    label = label or "output file"
    target = _output_target(path, label)
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
    """Hold Ctrl-C (SIGINT) for the body and deliver it after, where the platform can (the main thread on POSIX):
    a handful of renames that must land together or not at all."""
    import signal
    import threading

    can = hasattr(signal, "pthread_sigmask") and threading.current_thread() is threading.main_thread()
    if can:
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        if can:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


def atomic_write_folder(directory: str | Path, files: list[tuple[str, str, bool]], remove: set[str] = frozenset()) -> None:
    """Write `files` ((name, text, executable), the last one the index that lists the others, e.g. SUMMARY.md) into
    `directory` together, and remove the names in `remove`: all of it or none. Why: `solve --render` interrupted
    half-way left 17 of 20 scripts and no SUMMARY.md. Everything is first written into a hidden staging folder
    beside them (same file system; Ctrl-C there leaves the folder as it was), then renamed into place with Ctrl-C
    held, the index last. Targets are judged as `atomic_write_text` judges them (regular files or new names only)."""
    directory = _resolved(directory)
    for name, _, _ in files:
        _output_target(directory / name, "output file")
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
    """Refuse an output path that names the input file itself (links followed): `render train.sh -o train.sh` replaced
    the user's own script with the rendered one."""
    try:
        same = Path(source).resolve().samefile(Path(output).resolve())
    except OSError:  # either does not exist (yet): not the same file
        return
    if same:
        raise InputRefused(f"{label}: {output} is the input file; writing there would replace what was read: "
                           "write elsewhere")
