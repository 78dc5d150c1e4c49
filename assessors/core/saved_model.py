"""Saved pyfunc models across versions: what an older model lacks, and the one-line error when it cannot load.

:data:`MODEL_FORMAT` is stored with every :class:`~assessors.core.pyfunc.AssessorModel` (in the object
and in the MLmodel file's metadata). A model saved before it existed (format 1) loads: the known LLMs'
posterior it may ship is turned into one state per LLM, and what it lacks is listed in a note
(:func:`missing_parts`) that loading logs. A model that cannot be unpickled at all (a class it names
no longer exists) is a :class:`~assessors.errors.ConfigError` naming its format and how to retrain
(:func:`unloadable_model_error`). A part whose class was retired (:data:`RETIRED_CLASSES`) loads as a
:class:`RetiredPart` and is not used; a class that moved (:data:`MOVED_MODULES`) loads from its new module.
"""
from __future__ import annotations

import importlib
import logging
import sys
import types

log = logging.getLogger(__name__)

#: The saved-model format this version writes: 2 = the assessor protocol (known LLMs as states).
MODEL_FORMAT = 2

#: What retraining a model takes (the training task logs the pyfunc model with tracking on).
RETRAIN = "retrain it with `python train.py` (tracking.log_model=true) and pass the new model_uri"

#: Optional parts of a saved model: attribute -> what using the model without it means.
OPTIONAL_PARTS = {
    "trust_model": "no expected-AUC model: trust reports carry no expected-AUC band",
    "trust_policy": "no stored trust policy: the posterior trust report uses its stated defaults",
    "training_prompts": "no record of the training prompts: adaptive onboarding needs prompt files named",
    "prompt_ood": "no prompt-side trust signal: target prompts unlike the training prompts are not flagged",
    "known_states": "no known LLMs' states: known LLMs are scored from their reference results only",
}


#: Classes that older models pickled and this version no longer has: module -> class names.
RETIRED_CLASSES = {"assessors.trust.expected": ("TrustModel",)}  # the retired expected-AUC trust model


class RetiredPart:
    """What an instance of a retired class (:data:`RETIRED_CLASSES`) in an older model loads as: its
    pickled attributes, never used (the model's note says what it lacks)."""


#: Modules whose classes older models pickled and that moved: old module -> the core module that has them
#: now (imported only when such a model is unpickled).
MOVED_MODULES = {
    "assessors.core.task_calibration": "assessors.core.task_calibration_profiles",  # TaskProfiles
}


def _register_retired() -> None:
    """Make every retired class importable under its old name, as :class:`RetiredPart`, and every moved
    class under its old module (pickle finds a class by its module and name)."""
    for module, names in RETIRED_CLASSES.items():
        stand_in = types.ModuleType(module, "Classes older saved models name; they load as RetiredPart.")
        stand_in.__dict__.update(dict.fromkeys(names, RetiredPart))
        sys.modules.setdefault(module, stand_in)
    for module, moved_to in MOVED_MODULES.items():
        stand_in = types.ModuleType(module, f"Moved to {moved_to}; older saved models name it.")
        stand_in.__getattr__ = lambda name, to=moved_to: getattr(importlib.import_module(to), name)
        sys.modules.setdefault(module, stand_in)


_register_retired()


def upgrade_state(state: dict) -> dict:
    """The pickled state of an :class:`AssessorModel` in the current format (a copy; ``state`` is kept).

    Format 1 shipped a latent assessor's known LLMs as one batched posterior (``known_posterior``); it
    becomes one state per LLM. Missing optional parts are None (see :func:`missing_parts`).
    """
    state = dict(state)
    old = state.pop("known_posterior", None)
    if "known_states" not in state:
        state["known_states"] = None if old is None else [old.take([i]) for i in range(len(old))]
    for name in OPTIONAL_PARTS:
        state.setdefault(name, None)
    fmt = state.setdefault("model_format", 1)
    if fmt < MODEL_FORMAT:
        missing = missing_parts(state)
        log.warning("this model was saved in format %d (this version writes %d)%s", fmt, MODEL_FORMAT,
                    f"; it lacks: {'; '.join(missing)} ({RETRAIN} to get them)" if missing else "; nothing is missing")
    return state


def missing_parts(state: dict) -> list[str]:
    """What a model with this state lacks, one sentence per missing optional part."""
    return [why for name, why in OPTIONAL_PARTS.items() if state.get(name) is None]


def unloadable_model_error(uri: str, model_format, exc: BaseException) -> str:
    """One line for a model that cannot be loaded: its format (``model_format``, None when unknown), this
    version's, the error, and how to retrain."""
    saved = f"format {model_format}" if model_format is not None else "an older format (before format 2)"
    return (f"model_uri {uri!r} was saved in {saved} and cannot be loaded by assessors with format {MODEL_FORMAT} "
            f"({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}); {RETRAIN}")
