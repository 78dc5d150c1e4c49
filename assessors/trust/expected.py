"""The name an older model's ``trust_model`` (an expected-AUC regression of the retired report) unpickles to.

Loaded and ignored: the trust report gives the expected AUC and its band for every assessor family.
"""
from sklearn.base import BaseEstimator


class TrustModel(BaseEstimator):
    """What a stored ``trust_model`` loads as; never fitted or used."""
