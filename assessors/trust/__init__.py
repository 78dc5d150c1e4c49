"""Know when not to trust a prediction: trust signals, trust report, expected quality, fallback."""
from assessors.trust.expected import TrustModel, loo_reference_auc, loo_reference_predictions
from assessors.trust.fallback import FallbackPolicy
from assessors.trust.report import (TrustReport, log_trust_report, make_trust_fn, training_profile,
                                    trust_report)
from assessors.trust.signals import kappa, nearest, pairwise_kappa, range_check, sufficiency

__all__ = ["FallbackPolicy", "TrustModel", "TrustReport", "kappa", "log_trust_report", "loo_reference_auc",
           "loo_reference_predictions", "make_trust_fn", "nearest", "pairwise_kappa", "range_check",
           "sufficiency", "training_profile", "trust_report"]
