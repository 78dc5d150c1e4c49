"""Know when not to trust a prediction: one trust report for every assessor family, its verdict and the
predictor served after it (:func:`make_trust_fn`, the registry's hook)."""
from assessors.trust.posterior_policy import PosteriorTrustPolicy, make_trust_fn
from assessors.trust.posterior_report import PosteriorTrust, posterior_trust

__all__ = ["PosteriorTrust", "PosteriorTrustPolicy", "make_trust_fn", "posterior_trust"]
