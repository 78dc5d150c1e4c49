"""The fitted assessor as an MLflow pyfunc model (``mlflow models serve`` works on it).

Input: a DataFrame with a ``prompt`` column. Which LLM: exactly one of ``params={"llm": name}``
for an LLM known at training time, or ``params={"reference_success": [...]}`` with the new
LLM's results on the reference set in the order of ``reference_ids`` (-1 = not evaluated).
An unknown name, both at once, or neither is an error. Output: a DataFrame with ``p_success``
(and ``p_std``, the posterior-predictive spread, for assessors that give one).

The logged signature's default ``reference_success`` is all -1 (nothing evaluated): MLflow fills
missing params with their defaults, so the default must mean "not given".
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from mlflow.exceptions import MlflowException
from mlflow.protos.databricks_pb2 import INVALID_PARAMETER_VALUE
from mlflow.pyfunc import PythonModel

from assessors.errors import AssessorsError


class AssessorParamError(AssessorsError, MlflowException, ValueError):
    """Bad ``params`` for the pyfunc model; ``mlflow models serve`` answers it with HTTP 400."""

    def __init__(self, message: str):
        MlflowException.__init__(self, message, error_code=INVALID_PARAMETER_VALUE)


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
    trust_model : assessors.trust.expected.TrustModel, optional
        Fitted on validation LLMs; gives trust reports an expected-AUC band.
    """

    def __init__(self, assessor, featurizer, reference_ids, reference_success, llms, trust_model=None):
        self.assessor = assessor
        self.featurizer = featurizer
        self.reference_ids = list(reference_ids)
        self.reference_success = np.asarray(reference_success, dtype=np.float32)
        self.llms = list(llms)
        self.trust_model = trust_model  # expected-AUC model for trust reports (assessors.trust)

    def reference_vector(self, llm: str | None = None, reference_success=None) -> np.ndarray:
        """The reference vector (n_ref,) for a known LLM name or a supplied list (-1 = not evaluated).

        Raises
        ------
        AssessorParamError
            Unknown name, both a name and evaluated reference results, neither, or a list of
            the wrong length.
        """
        r = None
        if reference_success is not None and len(reference_success) > 0:
            r = np.asarray(reference_success, dtype=np.float32)
            if r.shape != (len(self.reference_ids),):
                raise AssessorParamError(f"reference_success must have {len(self.reference_ids)} values "
                                         f"(one per reference id), got {r.shape}")
            r = np.where(r < 0, np.nan, r)
            if np.isnan(r).all():
                r = None  # all -1: the signature's default, nothing supplied
        if llm and r is not None:
            raise AssessorParamError(f"pass either params={{'llm': {llm!r}}} or reference_success, not both")
        if r is not None:
            return r
        if not llm:
            raise AssessorParamError("pass params={'llm': name} for an LLM known at training time, or "
                                     "params={'reference_success': [...]} with a new LLM's reference results")
        if llm not in self.llms:
            raise AssessorParamError(f"unknown LLM {llm!r}: this model knows {len(self.llms)} LLMs "
                                     f"({', '.join(self.llms[:5])}{', ...' if len(self.llms) > 5 else ''}); "
                                     "for a new LLM pass params={'reference_success': [...]}")
        return self.reference_success[self.llms.index(llm)]

    def score(self, prompts: list[str], reference: np.ndarray) -> np.ndarray:
        """P(success) of shape (n_prompts,) for one LLM's reference vector (n_ref,)."""
        X = self.featurizer.transform(list(prompts))
        return self.assessor.predict_proba(X, reference)

    def predict(self, context, model_input: pd.DataFrame, params: dict | None = None) -> pd.DataFrame:
        params = params or {}
        r = self.reference_vector(params.get("llm") or None, params.get("reference_success"))
        prompts = model_input["prompt"].astype(str).tolist()
        if hasattr(self.assessor, "predict_distribution"):
            # assessors with a posterior (assessor=latent) also give the spread of the prediction
            p, std, _ = self.assessor.predict_distribution(self.featurizer.transform(prompts), r)
            return pd.DataFrame({"p_success": p, "p_std": std})
        return pd.DataFrame({"p_success": self.score(prompts, r)})


def assessor_signature(model: AssessorModel, example_prompts):
    """Signature prompt -> p_success with params ``llm`` (default "") and ``reference_success``
    (default all -1, i.e. not given)."""
    from mlflow.models import infer_signature

    example = pd.DataFrame({"prompt": list(example_prompts)})
    params = {"llm": "", "reference_success": [-1.0] * len(model.reference_ids)}
    out = model.predict(None, example, {"llm": model.llms[0]})
    return infer_signature(example, out, params=params)


def log_assessor_model(run, assessor, featurizer, reference_ids, reference_success, llms, example_prompts,
                       trust_model=None):
    """Log an :class:`AssessorModel` with its signature (:func:`assessor_signature`)."""
    model = AssessorModel(assessor, featurizer, reference_ids, reference_success, llms, trust_model)
    signature = assessor_signature(model, example_prompts)
    return run.log_model(model, "assessor", signature=signature, input_example=None,
                         pip_requirements=["assessors", "mlflow", "sentence-transformers", "xgboost", "scikit-learn"])
