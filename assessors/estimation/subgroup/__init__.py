"""Per-subgroup accuracy from few observations: direct (DT), synthetic regression (SR) and
empirical-Bayes (EB) estimators, after Fogliato et al. (2024), "Precise Model Benchmarking with
Only a Few Observations"."""
