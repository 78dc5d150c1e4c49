"""Where the data lives: a local copy, or a checksum-verified download into a cache.

Resolution order, for a data set ``name`` (a folder such as ``open_llm_leaderboard_v2``):

1. the ``root`` argument (Hydra ``data.root=``): ``<root>/<name>/`` or ``root`` itself if it is
   that folder;
2. the ``ASSESSORS_DATA_DIR`` environment variable, the same way;
3. the cache ``<cache_dir>/<name>/`` (``cache_dir`` argument, else ``ASSESSORS_CACHE_DIR``, else
   ``~/.cache/assessors``): files listed in :data:`assessors.data.manifest.SOURCES` that are missing
   are downloaded with a tqdm progress bar, checked against their sha256 when one is recorded, and
   moved into place atomically (a killed download never leaves a partial file under its real name).

Offline (``HF_HUB_OFFLINE=1``, ``ASSESSORS_OFFLINE=1`` or any network error) without a local copy,
:class:`~assessors.errors.OfflineError` is raised at once, naming ``ASSESSORS_DATA_DIR``.
"""
from __future__ import annotations

import hashlib
import logging
import os
import socket
import urllib.error
import urllib.request
from pathlib import Path

from tqdm.auto import tqdm

from assessors.data.manifest import SOURCES, SourceFile
from assessors.errors import ChecksumError, DataError, OfflineError
from assessors.io import atomic_open

log = logging.getLogger("assessors.data")

#: Seconds to wait for a server before deciding the machine is offline.
TIMEOUT = 20.0
_CHUNK = 1 << 20


def default_cache_dir() -> Path:
    """``$ASSESSORS_CACHE_DIR`` or ``~/.cache/assessors``."""
    return Path(os.environ.get("ASSESSORS_CACHE_DIR") or Path.home() / ".cache" / "assessors")


def _local(base: str | os.PathLike, name: str, what: str) -> Path:
    base = Path(base).expanduser()
    if (base / name).is_dir():
        return base / name
    if base.is_dir() and base.name == name:
        return base
    raise DataError(f"{what}={str(base)!r} has no {name}/ folder (expected {base / name}); "
                    f"point it at the directory that contains {name}/")


def locate(name: str, root: str | os.PathLike | None = None, cache_dir: str | os.PathLike | None = None,
           download: bool = True) -> Path:
    """Return the folder holding data set ``name``, downloading it into the cache if needed.

    Parameters
    ----------
    name : str
        Data set folder name, a key of :data:`~assessors.data.manifest.SOURCES`.
    root : path, optional
        Explicit local data directory; takes precedence over ``ASSESSORS_DATA_DIR``.
    cache_dir : path, optional
        Download cache; default :func:`default_cache_dir`.
    download : bool
        If False, never touch the network (raise OfflineError when the cache is incomplete).
    """
    if root is not None and str(root) not in ("", "None", "null"):
        return _local(root, name, "data.root")
    env = os.environ.get("ASSESSORS_DATA_DIR")
    if env:
        return _local(env, name, "ASSESSORS_DATA_DIR")
    target = Path(cache_dir).expanduser() if cache_dir not in (None, "", "None", "null") else default_cache_dir()
    return fetch_all(name, target / name, download=download)


def fetch_all(name: str, dest: Path, download: bool = True) -> Path:
    """Make sure every manifest file of ``name`` is present and verified under ``dest``."""
    if name not in SOURCES:
        raise DataError(f"no download source is known for data set {name!r}; set ASSESSORS_DATA_DIR "
                        f"(or data.root=) to a directory containing {name}/")
    files = SOURCES[name]
    missing = [f for f in files if not (dest / f.path).exists()]
    for f in files:
        if f not in missing:
            verify(dest / f.path, f.sha256)
    if not missing:
        return dest
    no_url = [f.path for f in missing if f.url is None]
    if no_url:
        raise DataError(f"{name}: {len(no_url)} file(s) (e.g. {no_url[0]}) have no public download; set "
                        f"ASSESSORS_DATA_DIR (or data.root=) to a directory containing {name}/")
    if not download or _offline_flag():
        raise OfflineError(_offline_message(name, dest, "offline mode is set" if download else "download=False"))
    log.info("%s: downloading %d file(s) into %s", name, len(missing), dest)
    for f in tqdm(missing, desc=f"download {name}", unit="file", disable=len(missing) < 2):
        fetch(f, dest / f.path, name=name)
    return dest


def fetch(src: SourceFile, path: Path, name: str = "data") -> Path:
    """Download one file to ``path`` atomically, with a progress bar and a sha256 check."""
    h = hashlib.sha256()
    with atomic_open(path) as out:  # a failed download or checksum leaves nothing under ``path``
        try:
            with urllib.request.urlopen(src.url, timeout=TIMEOUT) as resp:
                total = int(resp.headers.get("Content-Length") or 0) or None
                with tqdm(total=total, unit="B", unit_scale=True, desc=path.name, leave=False) as bar:
                    while chunk := resp.read(_CHUNK):
                        out.write(chunk)
                        h.update(chunk)
                        bar.update(len(chunk))
        except urllib.error.HTTPError as e:
            raise DataError(f"{src.url}: HTTP {e.code} {e.reason} while downloading {name}") from e
        except (urllib.error.URLError, socket.timeout, TimeoutError, ConnectionError, OSError) as e:
            raise OfflineError(_offline_message(name, path.parent, f"{type(e).__name__}: {e}")) from e
        _check(h.hexdigest(), src.sha256, src.url)
    return path


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(_CHUNK):
            h.update(chunk)
    return h.hexdigest()


def verify(path: Path, sha256: str | None) -> None:
    """Raise ChecksumError if ``path`` does not match ``sha256`` (no check when None)."""
    if sha256 is not None:
        _check(sha256_file(path), sha256, path)


def _check(actual: str, expected: str | None, where) -> None:
    if expected is None:
        log.warning("%s: no checksum recorded; downloaded without verification (sha256 %s)", where, actual)
    elif actual != expected:
        raise ChecksumError(f"{where}: checksum mismatch (sha256 {actual}, expected {expected}); "
                            "the file is corrupt, truncated or changed upstream: delete it and retry")


def _offline_flag() -> bool:
    return any(os.environ.get(v, "").strip().lower() in ("1", "true", "yes")
               for v in ("HF_HUB_OFFLINE", "ASSESSORS_OFFLINE"))


def _offline_message(name: str, dest: Path, why: str) -> str:
    return (f"cannot download {name}: the machine is offline or the source is unreachable ({why}), and no "
            f"complete local copy was found in {dest}. Set ASSESSORS_DATA_DIR (or pass data.root=) to a "
            f"directory containing {name}/.")
