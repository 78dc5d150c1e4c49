"""Classifier heads used by the assessors: a hyper-parameter grid wrapper and a Lightning MLP.

scikit-learn and XGBoost estimators are used directly through ``_target_`` in
``conf/classifier/*.yaml``; only code that sklearn/XGBoost lack lives here.
"""
