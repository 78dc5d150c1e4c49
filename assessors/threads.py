"""Pin torch's intra-op thread count for a block of work, and restore it afterwards."""
from __future__ import annotations

import contextlib


@contextlib.contextmanager
def torch_threads(n: int | None):
    """Run the block with ``torch.set_num_threads(n)``; None or 0 leaves the setting alone.

    The setting is process-wide: blocks running in parallel threads of one process share it.
    torch is imported here, not at module import, so callers that never pin threads stay light.
    """
    import torch

    before = torch.get_num_threads()
    if n:
        torch.set_num_threads(int(n))
    try:
        yield
    finally:
        torch.set_num_threads(before)
