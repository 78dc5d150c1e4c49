"""Atomic file writes: readers see the old file or the whole new one, never half of it.

Three shapes of the one rule (write beside the destination, then ``os.replace``):
:func:`atomic_write` hands a writer the temporary path (``df.to_parquet(tmp)``),
:func:`atomic_open` an open file object (``np.savez(fh, ...)``, ``fig.savefig(fh)``, a
download's chunks), and :func:`atomic_dir` a temporary directory for multi-file outputs.
"""
from __future__ import annotations

import os
import shutil
import tempfile
import uuid
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Callable, Iterator


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


#: Read once: ``os.umask`` can only be read by setting it, which is not thread-safe.
_UMASK = _umask()


@contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary file path beside ``path``; on a clean exit it is renamed into place.

    The temporary file ends in ``.tmp`` (so globs such as ``*.parquet`` never see it) and is
    removed if the block raises or the process is interrupted. The final file gets ordinary
    permissions (``0o666`` minus the umask), not the private ``0o600`` of :func:`tempfile.mkstemp`.
    """
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{out.name}.", suffix=".tmp", dir=out.parent)
    os.close(fd)
    try:
        yield Path(tmp)
        os.chmod(tmp, 0o666 & ~_UMASK)
        os.replace(tmp, out)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def atomic_write(path: str | os.PathLike, write: Callable[[str], None]) -> Path:
    """Call ``write(tmp_path)`` on a temporary file beside ``path``, then rename it into place.

    See :func:`atomic_path` for the temporary file. Returns ``path`` as a Path.
    """
    with atomic_path(path) as tmp:
        write(str(tmp))
    return Path(path)


@contextmanager
def atomic_open(path: str | os.PathLike, mode: str = "wb", **kwargs) -> Iterator[IO]:
    """``open`` a temporary file beside ``path`` for writing; renamed into place on a clean exit.

    For writers that take a file object, e.g. ``np.save``/``np.savez`` (which append ``.npy`` /
    ``.npz`` to a path that lacks it) or a streamed download. ``kwargs`` go to :func:`open`.
    """
    with atomic_path(path) as tmp, open(tmp, mode, **kwargs) as fh:
        yield fh


@contextmanager
def atomic_dir(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary directory beside ``path``; on a clean exit it replaces ``path``.

    An existing ``path`` (a directory) is moved aside and deleted only after the new one is in
    place, so a crash leaves the old directory or the new one, never a partial one. The
    temporary directory ends in ``.tmp`` and is deleted if the block raises.
    """
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".tmp", dir=out.parent))
    try:
        yield tmp
        os.chmod(tmp, 0o777 & ~_UMASK)  # mkdtemp makes it private
        if out.exists():
            old = out.with_name(f".{out.name}.{uuid.uuid4().hex[:8]}.old")
            os.replace(out, old)
            os.replace(tmp, out)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
