"""The fitted assessor as an MLflow pyfunc model (``mlflow models serve`` works on it).

Input: a DataFrame with a ``prompt`` column. Which LLM: exactly one of

- ``params={"llm": name}``: an LLM known at training time;
- ``params={"reference_success": [...]}``: a new LLM's results on the reference set in the order
  of ``reference_ids`` (-1 = not evaluated);
- ``params={"evidence_prompts": [...], "evidence_success": [...]}``: a new LLM's graded answers on
  any prompts, one 0/1 per prompt (-1 = not graded). The prompts are featurized like the scored ones
  and the assessor describes the LLM from them (:meth:`~assessors.core.protocol.Assessor.describe`:
  a posterior with ``assessor=latent``; the paper's generic assessor needs the reference prompts
  among them), as the serving registry does for ``POST /v1/llms`` with ``evidence``.

Evidence is not combined with ``llm`` or ``reference_success`` (as in the serving registry): an
unknown name, more than one of the three, or none is an error (:class:`AssessorParamError`, HTTP
400 under ``mlflow models serve``). Output: a DataFrame with ``p_success`` (and ``p_std``, the
posterior-predictive spread, for assessors that give one).

MLflow fills missing params with the signature's defaults, so each default means "not given":
``llm`` "", ``reference_success`` all -1 (nothing evaluated), ``evidence_prompts`` ``[""]`` and
``evidence_success`` ``[-1.0]``.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from mlflow.exceptions import MlflowException
from mlflow.protos.databricks_pb2 import INVALID_PARAMETER_VALUE
from mlflow.pyfunc import PythonModel

from assessors.core.evidence import evidence_from_answers
from assessors.core.posterior import check_answers
from assessors.core.saved_model import MODEL_FORMAT, upgrade_state
from assessors.errors import AssessorsError, DataError, NoPosteriorError

#: What a saved model needs installed, stated: without it MLflow infers the list by loading the model
#: again in a subprocess (tens of seconds for a torch model).
PIP_REQUIREMENTS = ["assessors", "mlflow", "sentence-transformers", "xgboost", "scikit-learn"]

#: Signature defaults of the evidence params: MLflow sends them when a request leaves the params out.
NO_EVIDENCE_PROMPTS, NO_EVIDENCE_SUCCESS = [""], [-1.0]


class AssessorParamError(AssessorsError, MlflowException, ValueError):
    """Bad ``params`` for the pyfunc model; ``mlflow models serve`` answers it with HTTP 400."""

    def __init__(self, message: str):
        MlflowException.__init__(self, message, error_code=INVALID_PARAMETER_VALUE)


class NoPosteriorParamError(AssessorParamError, NoPosteriorError):
    """Evidence params for a model whose assessor has no posterior over abilities (not ``assessor=latent``)."""


class AssessorModel(PythonModel):
    """Featurizer + generic assessor + known LLMs' reference vectors.

    Parameters
    ----------
    assessor : GenericAssessor
        Fitted generic assessor.
    featurizer : Featurizer
        Fitted featurizer (its model is re-loaded lazily after unpickling).
    reference_ids : list of str, length n_ref
    reference_success : ndarray of shape (n_llms, n_ref)
        Known LLMs' reference results, so they can be scored by name.
    llms : list of str, length n_llms
    trust_model : optional
        The retired expected-AUC model of older models (a :class:`~assessors.core.saved_model.RetiredPart`);
        not used.
    trust_policy : dict, optional
        Thresholds and fallback of the posterior trust report chosen on the validation LLMs
        (latent assessors; :meth:`ValidatedTrustPolicy.record`: ``source``, ``options``,
        ``chosen_by``, ...): the defaults of the trust report wherever the model is used. None (and
        models saved before it existed): the stated defaults.
    training_prompts : dict, optional
        Where the training prompts came from (:func:`~assessors.data.training_prompts.training_prompts_record`:
        prompt files relative to the data dir and the training instance ids, no texts): the default
        candidate pool of adaptive onboarding. None (and models saved before it existed): onboarding
        needs prompt files named.
    prompt_ood : PromptOOD, optional
        The posterior trust report's prompt-side signal (fitted on the training prompts): target prompts
        unlike them are flagged wherever the model is used. None (and older models): off.
    known_states : list, optional
        The known LLMs' states from all their training answers (``assessor.describe_known``, one per
        LLM in the order of ``llms``), so a known LLM is scored from everything the model saw of it, not
        from its reference results alone. None: the reference results.
    """

    def __init__(self, assessor, featurizer, reference_ids, reference_success, llms, trust_model=None,
                 trust_policy=None, training_prompts=None, prompt_ood=None, known_states=None):
        self.assessor = assessor
        self.featurizer = featurizer
        self.reference_ids = list(reference_ids)
        self.reference_success = np.asarray(reference_success, dtype=np.float32)
        self.llms = list(llms)
        self.trust_model = trust_model  # expected-AUC model for trust reports (assessors.trust)
        self.trust_policy = trust_policy  # posterior trust thresholds chosen on validation LLMs (dict)
        self.training_prompts = training_prompts  # relative prompt files + training ids (dict)
        self.prompt_ood = prompt_ood  # kNN distance to the training prompts (assessors.trust.prompt_ood)
        self.known_states = None if known_states is None else list(known_states)
        self.model_format = MODEL_FORMAT  # what assessors.core.saved_model upgrades older models from

    def __setstate__(self, state):
        # models saved before the assessor protocol: see assessors.core.saved_model
        self.__dict__.update(upgrade_state(state))

    def known_llm_state(self, llm: str):
        """The state of known LLM ``llm`` from all its training answers, or None when the model ships none
        (then it is described by its reference results)."""
        if self.known_states is None or llm not in self.llms:
            return None
        return self.known_states[self.llms.index(llm)]

    def supplied_reference(self, reference_success) -> np.ndarray | None:
        """``reference_success`` as a vector (n_ref,) with NaN = not evaluated; None when nothing
        is supplied (missing, empty, or all -1: the signature's default).

        Raises
        ------
        AssessorParamError
            A list of the wrong length.
        """
        if reference_success is None or len(reference_success) == 0:
            return None
        r = np.asarray(reference_success, dtype=np.float32)
        if r.shape != (len(self.reference_ids),):
            raise AssessorParamError(f"reference_success must have {len(self.reference_ids)} values "
                                     f"(one per reference id), got {r.shape}")
        r = np.where(r < 0, np.nan, r)
        return None if np.isnan(r).all() else r

    def reference_vector(self, llm: str | None = None, reference_success=None) -> np.ndarray:
        """The reference vector (n_ref,) for a known LLM name or a supplied list (-1 = not evaluated).

        Raises
        ------
        AssessorParamError
            Unknown name, both a name and evaluated reference results, neither, or a list of
            the wrong length.
        """
        r = self.supplied_reference(reference_success)
        if llm and r is not None:
            raise AssessorParamError(f"pass either params={{'llm': {llm!r}}} or reference_success, not both")
        if r is not None:
            return r
        if not llm:
            raise AssessorParamError("pass params={'llm': name} for an LLM known at training time, "
                                     "params={'reference_success': [...]} with a new LLM's reference results, or "
                                     "params={'evidence_prompts': [...], 'evidence_success': [...]} with its graded "
                                     "answers on any prompts (assessor=latent)")
        if llm not in self.llms:
            raise AssessorParamError(f"unknown LLM {llm!r}: this model knows {len(self.llms)} LLMs "
                                     f"({', '.join(self.llms[:5])}{', ...' if len(self.llms) > 5 else ''}); "
                                     "for a new LLM pass params={'reference_success': [...]} or, with assessor=latent, "
                                     "params={'evidence_prompts': [...], 'evidence_success': [...]}")
        return self.reference_success[self.llms.index(llm)]

    def evidence_answers(self, params: dict) -> tuple[list[str], list] | None:
        """``(prompts, answers)`` from ``params["evidence_prompts"]`` and ``params["evidence_success"]``
        (answers 0/1, None where the value was -1 = not graded); None when neither is given (missing
        or the signature's default).

        Raises
        ------
        AssessorParamError
            Lists of different lengths, values other than 0/1/-1, no graded answer, or evidence together
            with ``llm`` or ``reference_success``.
        """
        prompts, success = (_given(params, k, d) for k, d in (("evidence_prompts", NO_EVIDENCE_PROMPTS),
                                                                ("evidence_success", NO_EVIDENCE_SUCCESS)))
        if prompts is None and success is None:
            return None
        y = _evidence_values(prompts, success)
        if params.get("llm") or self.supplied_reference(params.get("reference_success")) is not None:
            raise AssessorParamError("pass exactly one of llm, reference_success or evidence_prompts/evidence_success; "
                                     "evidence is not combined with the others")
        return [str(p) for p in prompts], [None if np.isnan(v) else float(v) for v in y]

    def evidence_state(self, evidence_prompts: list[str], answers: list):
        """The assessor's state of the LLM whose graded ``answers`` (0/1, None = not graded) on
        ``evidence_prompts`` are given (:meth:`~assessors.core.protocol.Assessor.describe`).

        Raises
        ------
        NoPosteriorParamError
            The assessor cannot use this evidence (the generic assessor without the reference prompts).
        """
        evidence = evidence_from_answers(self.featurizer.transform(list(evidence_prompts)), answers)
        try:
            return self.assessor.describe(evidence)
        except NoPosteriorError as e:
            raise NoPosteriorParamError(f"params evidence_prompts/evidence_success: {e}: pass "
                                        "params={'reference_success': [...]} with them") from None

    def state(self, params: dict):
        """The state of the LLM that ``params`` name: from evidence, a known LLM's training answers, or
        reference results (checked: :meth:`reference_vector`, :meth:`evidence_answers`)."""
        evidence = self.evidence_answers(params)
        if evidence is not None:
            return self.evidence_state(*evidence)
        r = self.reference_vector(params.get("llm") or None, params.get("reference_success"))
        known = self.known_llm_state(params["llm"]) if params.get("llm") else None
        return known if known is not None else self.assessor.describe_reference(r[None, :])[0]

    def score(self, prompts: list[str], reference: np.ndarray) -> np.ndarray:
        """P(success) of shape (n_prompts,) for one LLM's reference vector (n_ref,)."""
        state = self.assessor.describe_reference(np.asarray(reference)[None, :])[0]
        return self.assessor.predict_state(self.featurizer.transform(list(prompts)), state)[0]

    def predict(self, context, model_input: pd.DataFrame, params: dict | None = None) -> pd.DataFrame:
        prompts = model_input["prompt"].astype(str).tolist()
        state = self.state(params or {})
        p, std = self.assessor.predict_state(self.featurizer.transform(prompts), state)
        out = pd.DataFrame({"p_success": np.asarray(p, np.float32)})
        if std is not None:  # families with a spread (assessor=latent) give it
            out["p_std"] = np.asarray(std, np.float32)
        return out


def _evidence_values(prompts: list | None, success: list | None) -> np.ndarray:
    """``evidence_success`` as floats (n,) (0, 1 or NaN = not graded), checked against ``evidence_prompts`` (n,)."""
    if prompts is None or success is None:
        given, missing = ("evidence_prompts", "evidence_success") if success is None else \
            ("evidence_success", "evidence_prompts")
        raise AssessorParamError(f"{given} given without {missing}: pass both, one 0/1 per prompt")
    if len(prompts) != len(success):
        raise AssessorParamError(f"evidence_prompts has {len(prompts)} prompts but evidence_success has "
                                 f"{len(success)} values; give one 0/1 per prompt")
    if not prompts:
        raise AssessorParamError("evidence is empty: evidence_prompts and evidence_success have no items; "
                                 "give at least one graded prompt")
    y = np.array([_answer(v) for v in success], dtype=np.float64)
    try:  # -1 is the pyfunc's "not graded"; the 0/1/missing rule is the posterior's own
        y = check_answers(np.where(y == -1, np.nan, y), "evidence_success")[0]
    except DataError as e:
        raise AssessorParamError(str(e)) from e
    if not np.isfinite(y).any():
        raise AssessorParamError(f"evidence is empty: none of the {len(y)} evidence_success values is graded "
                                 "(0 or 1); give at least one")
    return y


def _answer(value) -> float:
    """One ``evidence_success`` value as a float: None or NaN is not graded (NaN), a non-number inf (invalid)."""
    if value is None:
        return np.nan
    try:
        return float(value)
    except (TypeError, ValueError):
        return np.inf


def _given(params: dict, key: str, default: list) -> list | None:
    """``params[key]`` as a list, or None when it is missing or the signature's ``default``."""
    value = params.get(key)
    if value is None:
        return None
    value = [value] if isinstance(value, (str, int, float)) else list(value)
    return None if value == default else value


def assessor_signature(model: AssessorModel, example_prompts):
    """Signature prompt -> p_success with params ``llm`` (default ""), ``reference_success``
    (default all -1), ``evidence_prompts`` (default ``[""]``) and ``evidence_success`` (default
    ``[-1.0]``): every default means "not given"."""
    from mlflow.models import infer_signature

    example = pd.DataFrame({"prompt": list(example_prompts)})
    params = {"llm": "", "reference_success": [-1.0] * len(model.reference_ids),
              "evidence_prompts": list(NO_EVIDENCE_PROMPTS), "evidence_success": list(NO_EVIDENCE_SUCCESS)}
    out = model.predict(None, example, {"llm": model.llms[0]})
    return infer_signature(example, out, params=params)


def log_assessor_model(run, assessor, featurizer, reference_ids, reference_success, llms, example_prompts,
                       trust_model=None, trust_policy=None, training_prompts=None, prompt_ood=None,
                       known_states=None):
    """Log an :class:`AssessorModel` with its signature (:func:`assessor_signature`)."""
    model = AssessorModel(assessor, featurizer, reference_ids, reference_success, llms, trust_model, trust_policy,
                          training_prompts, prompt_ood, known_states)
    signature = assessor_signature(model, example_prompts)
    return run.log_model(model, "assessor", signature=signature, input_example=None, pip_requirements=PIP_REQUIREMENTS,
                         metadata={"assessors_model_format": MODEL_FORMAT})
