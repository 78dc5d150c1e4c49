"""Benchmark-level accuracy estimators (one per module); see :mod:`.base` for the contract."""
from assessors.estimation.benchmark.base import BenchmarkEstimator, Estimate

__all__ = ["BenchmarkEstimator", "Estimate"]
