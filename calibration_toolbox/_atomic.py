"""The one atomic writer (``save``; the command line's ``-o``, ``--save-model``, ``--plot``, ...).

Every file is written to a temporary file beside its target, flushed to disk, and renamed over
the target (``os.replace``), so that a target is either as it was or the whole new file.  The
files of one command are one :class:`Batch`: each is written to its temporary file, and all are
renamed only once every one is complete; a failure anywhere (an interrupt too) removes every
temporary file and leaves every target as it was.

A temporary file is named ``.{target}.{pid}-{16 hex digits}.tmp``, by the process writing it;
one that a process left behind when it was killed (``kill -9`` mid-write) is removed on the next
write of the same target, once no process of that number runs (POSIX).  A failed write is an
:class:`OutputError` (an ``OSError``) whose ``filename`` is the target as named, never the
temporary file.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import stat
from collections.abc import Iterator
from typing import IO, Union

__all__ = ["Batch", "OutputError", "batch", "write_atomically"]

# What follows ``.{target}.`` in the name of a temporary file: the writer's process number.
_TEMPORARY = re.compile(r"(?P<pid>[0-9]+)-[0-9a-f]{16}\.tmp")


class OutputError(OSError):
    """A file that could not be written; ``filename`` is the target, ``strerror`` what failed."""


@contextlib.contextmanager
def _failing_on(named: str) -> Iterator[None]:
    """An ``OSError`` of the block (a full disk, a read-only folder) as a write error."""
    try:
        yield
    except OutputError:
        raise
    except OSError as error:
        raise OutputError(error.errno, error.strerror or str(error), named) from error


def _running(pid: int) -> bool:
    """Whether a process numbered ``pid`` may run (True wherever that cannot be told)."""
    if os.name != "posix" or pid == os.getpid():
        return True  # elsewhere os.kill(pid, 0) would end the process
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (OSError, OverflowError):  # another user's process, or no such number
        return True
    return True


def _remove_stale(folder: str, base: str) -> None:
    """Remove the temporary files of ``base`` that processes no longer running left."""
    prefix = f".{base}."
    with contextlib.suppress(OSError):
        for name in os.listdir(folder):
            found = _TEMPORARY.fullmatch(name[len(prefix) :]) if name.startswith(prefix) else None
            if found is not None and not _running(int(found["pid"])):
                with contextlib.suppress(OSError):
                    os.unlink(os.path.join(folder, name))


def _sync_folder(folder: str) -> None:
    """Make the renames in ``folder`` durable (POSIX; elsewhere a folder cannot be opened)."""
    with contextlib.suppress(OSError):
        descriptor = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(descriptor)
        finally:
            os.close(descriptor)


class Batch:
    """Files written to temporary files, renamed over their targets together by :func:`batch`."""

    def __init__(self) -> None:
        # (temporary, target, the target as named), of the files not yet renamed
        self._written: list[tuple[str, str, str]] = []

    @contextlib.contextmanager
    def open(self, path: Union[str, os.PathLike]) -> Iterator[IO[bytes]]:
        """A binary handle on the temporary file of ``path`` (through a link, its file)."""
        named, target = os.fspath(path), os.path.realpath(path)
        folder, base = os.path.split(target)
        _remove_stale(folder, base)
        temporary = os.path.join(folder, f".{base}.{os.getpid()}-{os.urandom(8).hex()}.tmp")
        with _failing_on(named):
            if os.path.isdir(target):  # refused now: its rename would fail after the others'
                raise IsADirectoryError(errno.EISDIR, "Is a directory", named)
            # O_EXCL: never an existing file; 0o666 lets the umask apply, as open(path, "w").
            descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
            self._written.append((temporary, target, named))
            with os.fdopen(descriptor, "wb") as handle:
                yield handle
                handle.flush()
                os.fsync(handle.fileno())

    def write(self, path: Union[str, os.PathLike], content: Union[str, bytes]) -> None:
        """Write ``content`` (text as UTF-8) as the new ``path``."""
        with self.open(path) as handle:
            handle.write(content.encode("utf-8") if isinstance(content, str) else content)

    def commit(self) -> None:
        """Rename every temporary file over its target (an existing target keeps its mode)."""
        folders = dict.fromkeys(os.path.dirname(target) for _, target, _ in self._written)
        for temporary, target, named in self._written:
            with _failing_on(named), contextlib.suppress(FileNotFoundError):
                os.chmod(temporary, stat.S_IMODE(os.stat(target).st_mode))
        while self._written:
            temporary, target, named = self._written[0]
            with _failing_on(named):
                os.replace(temporary, target)
            self._written.pop(0)
        for folder in folders:
            _sync_folder(folder)

    def discard(self) -> None:
        """Remove the temporary files not renamed (every one, after a failure)."""
        for temporary, _, _ in self._written:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
        self._written = []


@contextlib.contextmanager
def batch() -> Iterator[Batch]:
    """A :class:`Batch` whose files replace their targets when the block succeeds, else none."""
    outputs = Batch()
    try:
        yield outputs
        outputs.commit()
    finally:
        outputs.discard()


def write_atomically(path: Union[str, os.PathLike], content: Union[str, bytes]) -> None:
    """Write ``content`` (text as UTF-8) as the new ``path``, atomically."""
    with batch() as outputs:
        outputs.write(path, content)
