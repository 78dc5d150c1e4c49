"""atomic_write: the old file survives a failed write, and no temporary file is left behind."""
from pathlib import Path

import pytest

from assessors.io import atomic_write


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
