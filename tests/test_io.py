"""Atomic writes: the old file survives a failed write, and no temporary file is left behind."""
import os
import stat
from pathlib import Path

import numpy as np
import pytest

from assessors.io import atomic_dir, atomic_open, atomic_write


def test_atomic_write_replaces_or_keeps_the_old_file(tmp_path):
    path = tmp_path / "sub" / "x.txt"
    atomic_write(path, lambda tmp: Path(tmp).write_text("one"))
    assert path.read_text() == "one"

    def half_then_crash(tmp):
        Path(tmp).write_text("half")
        raise KeyboardInterrupt("killed")

    with pytest.raises(KeyboardInterrupt):
        atomic_write(path, half_then_crash)
    assert path.read_text() == "one"
    assert sorted(p.name for p in path.parent.iterdir()) == ["x.txt"]


def test_atomic_open_gives_a_file_object_and_ordinary_permissions(tmp_path):
    path = tmp_path / "a.npz"
    with atomic_open(path) as fh:  # np.savez on a path would append ".npz" to the temporary name
        np.savez(fh, x=np.arange(3))
    with np.load(path) as z:
        assert z["x"].tolist() == [0, 1, 2]
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(path.stat().st_mode) == 0o666 & ~umask  # not mkstemp's private 0o600

    with pytest.raises(ValueError):
        with atomic_open(path) as fh:
            fh.write(b"partial")
            raise ValueError("checksum mismatch")
    with np.load(path) as z:
        assert z["x"].tolist() == [0, 1, 2]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.npz"]


def test_atomic_dir_replaces_a_whole_directory_or_keeps_the_old_one(tmp_path):
    out = tmp_path / "table"
    with atomic_dir(out) as tmp:
        (tmp / "a.txt").write_text("old")
    with pytest.raises(KeyboardInterrupt):
        with atomic_dir(out) as tmp:
            (tmp / "b.txt").write_text("half")
            raise KeyboardInterrupt("killed")
    assert sorted(p.name for p in out.iterdir()) == ["a.txt"]
    with atomic_dir(out) as tmp:
        (tmp / "b.txt").write_text("new")
    assert sorted(p.name for p in out.iterdir()) == ["b.txt"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["table"]
