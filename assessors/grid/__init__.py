"""Sweep bookkeeping of the paper's grid: config hashes for resumable jobs, the report from MLflow runs.

The job itself and the report task are :mod:`assessors.tasks.grid`.
"""
