"""The prompt-side signal of a model calibrated on a new task: the task's prompts are familiar again.

A calibrated task has answers on a few dozen of its prompts, so its other prompts are no longer unlike every
prompt with answers. Adding those few prompts to the training index is not enough on its own: a prompt's
distance is the mean over its nearest indexed prompts, and a task of 30 calibrated prompts is far sparser than
the training tasks the threshold was set on, so the task's prompts stayed beyond it. Here a prompt is also
judged against the calibrated prompts alone, by their own spread: it is familiar when it is as close to them
as they are to each other.
"""
from __future__ import annotations

import numpy as np

from assessors.trust.prompt_ood import PromptOOD


class CalibratedPromptOOD(PromptOOD):
    """A fitted :class:`PromptOOD` whose calibrated prompts count as familiar.

    A prompt's distance is the smaller of its distance to the training prompts (as in :class:`PromptOOD`)
    and its distance to the calibrated prompts rescaled so that the calibrated prompts' own threshold
    (the ``quantile`` of their leave-one-out distances among themselves) maps onto the training threshold.
    Built with :meth:`from_fitted`; the parameters are the fitted signal's.
    """

    @classmethod
    def from_fitted(cls, prompt_ood: PromptOOD, X_calibrated: np.ndarray) -> "CalibratedPromptOOD":
        """A copy of ``prompt_ood`` that also indexes the calibrated prompts ``X_calibrated`` (n_cal, d).

        With fewer than ``n_neighbors + 1`` calibrated prompts their spread cannot be measured, and the
        copy only indexes them (``cal_threshold_`` is None).
        """
        out = cls.__new__(cls)
        out.__dict__.update(prompt_ood.__dict__)  # the fitted state; the arrays are replaced, not changed
        X_cal = np.asarray(X_calibrated, dtype=np.float16)
        out.index_ = np.vstack([prompt_ood.index_, X_cal])
        out._nn, out._memo = None, None  # built from the old index
        out.calibrated_ = X_cal
        out._cal_nn = None
        out.cal_threshold_ = None
        if len(X_cal) > out.n_neighbors:
            # each calibrated prompt's distance to the others: its first neighbour is itself
            d = out._calibrated_nn().kneighbors(X_cal.astype(np.float32), n_neighbors=out.n_neighbors + 1)[0]
            out.cal_threshold_ = float(np.quantile(d[:, 1:].mean(1), out.quantile))
        return out

    def _calibrated_nn(self):
        if getattr(self, "_cal_nn", None) is None:  # not pickled: rebuilt from calibrated_ on first use
            from sklearn.neighbors import NearestNeighbors

            self._cal_nn = NearestNeighbors(n_neighbors=self.n_neighbors, metric="cosine", algorithm="brute").fit(
                self.calibrated_.astype(np.float32))
        return self._cal_nn

    def distance(self, X) -> np.ndarray:
        """Distance (m,) of each prompt of ``X`` (m, d): to the training prompts, or to the calibrated
        prompts on the training threshold's scale, whichever is smaller."""
        base = super().distance(X)
        if not self.cal_threshold_:
            return base
        cal = self._calibrated_nn().kneighbors(np.asarray(X, dtype=np.float32))[0].mean(1)
        return np.minimum(base, cal * (self.threshold_ / self.cal_threshold_))

    def __getstate__(self):
        state = super().__getstate__()
        state.pop("_cal_nn", None)
        return state

    def summary(self) -> dict:
        """:meth:`PromptOOD.summary` and the calibrated prompts: ``n_calibrated``, ``calibrated_threshold``."""
        return {**super().summary(), "n_calibrated": len(self.calibrated_), "calibrated_threshold": self.cal_threshold_}
