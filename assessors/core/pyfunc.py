"""The fitted assessor as an MLflow pyfunc model (``mlflow models serve`` works on it).

Input: a DataFrame with a ``prompt`` column. Which LLM: either ``params={"llm": name}`` for
an LLM known at training time, or ``params={"reference_success": [...]}`` with the new
LLM's results on the reference set in the order of ``reference_ids`` (-1 = not evaluated).
Output: a DataFrame with ``p_success`` (and ``p_std``, the posterior-predictive spread, for
assessors that give one).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

try:
    from mlflow.pyfunc import PythonModel
except ImportError:  # pragma: no cover - mlflow is a hard dependency; keeps import errors readable
    PythonModel = object


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
        """The reference vector (n_ref,) for a known LLM name or a supplied list."""
        if reference_success is not None:
            r = np.asarray(reference_success, dtype=np.float32)
            if r.shape != (len(self.reference_ids),):
                raise ValueError(f"reference_success must have {len(self.reference_ids)} values "
                                 f"(one per reference id), got {r.shape}")
            return np.where(r < 0, np.nan, r)
        if llm is None:
            raise ValueError("pass params={'llm': name} or params={'reference_success': [...]} ")
        if llm not in self.llms:
            raise KeyError(f"unknown LLM {llm!r}; known: {self.llms[:5]}... or pass reference_success")
        return self.reference_success[self.llms.index(llm)]

    def score(self, prompts: list[str], reference: np.ndarray) -> np.ndarray:
        """P(success) of shape (n_prompts,) for one LLM's reference vector (n_ref,)."""
        X = self.featurizer.transform(list(prompts))
        return self.assessor.predict_proba(X, reference)

    def predict(self, context, model_input: pd.DataFrame, params: dict | None = None) -> pd.DataFrame:
        params = params or {}
        ref = params.get("reference_success")
        ref = None if ref is None or len(ref) == 0 else ref
        r = self.reference_vector(params.get("llm") or None, ref)
        prompts = model_input["prompt"].astype(str).tolist()
        if hasattr(self.assessor, "predict_distribution"):
            # assessors with a posterior (assessor=latent) also give the spread of the prediction
            p, std, _ = self.assessor.predict_distribution(self.featurizer.transform(prompts), r)
            return pd.DataFrame({"p_success": p, "p_std": std})
        return pd.DataFrame({"p_success": self.score(prompts, r)})


def log_assessor_model(run, assessor, featurizer, reference_ids, reference_success, llms, example_prompts,
                       trust_model=None):
    """Log an :class:`AssessorModel` with a signature (prompt -> p_success, params llm/reference)."""
    from mlflow.models import infer_signature

    model = AssessorModel(assessor, featurizer, reference_ids, reference_success, llms, trust_model)
    example = pd.DataFrame({"prompt": list(example_prompts)})
    params = {"llm": "", "reference_success": [0.0] * len(model.reference_ids)}
    out = model.predict(None, example, {"llm": llms[0]})
    signature = infer_signature(example, out, params=params)
    return run.log_model(model, "assessor", signature=signature, input_example=None,
                         pip_requirements=["assessors", "mlflow", "sentence-transformers", "xgboost", "scikit-learn"])
