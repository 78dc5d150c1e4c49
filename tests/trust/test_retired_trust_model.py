"""A model saved with the retired expected-AUC trust model (``assessors.trust.expected.TrustModel``) still
unpickles: the part loads as a stand-in that nothing uses."""
from __future__ import annotations

import pickle
import struct


def _unicode(s: str) -> bytes:
    """Pickle's BINUNICODE opcode for ``s``."""
    return b"X" + struct.pack("<I", len(s.encode())) + s.encode()


def test_a_pickled_retired_trust_model_loads_as_a_retired_part():
    from assessors.core.saved_model import RetiredPart

    # what pickle wrote for {"trust_model": TrustModel()} (a scikit-learn estimator without parameters)
    # before the class was retired: GLOBAL module\nname, NEWOBJ, its state dict, BUILD
    old = (b"\x80\x02}" + _unicode("trust_model") + b"cassessors.trust.expected\nTrustModel\n)\x81}"
           + _unicode("_sklearn_version") + _unicode("1.5.2") + b"sbs.")
    state = pickle.loads(old)
    assert isinstance(state["trust_model"], RetiredPart)
    assert vars(state["trust_model"]) == {"_sklearn_version": "1.5.2"}
