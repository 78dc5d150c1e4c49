"""Task calibration (``conf/task_calibration/``): a fitted latent model adapted to a new task from known LLMs'
answers on some of its prompts, not retrained.

:class:`~assessors.task_calibration.calibration.TaskCalibration` fits the correction of the task's item
parameters; :mod:`assessors.core.task_calibration_profiles` holds the adapted model's neighbour profiles. The
Gaussian-process correction and the task's clusters it fits are the latent model's own parts
(:mod:`assessors.core.task_correction`, :mod:`assessors.core.task_clusters`). Entry points: ``predict.py
mode=calibrate_task``, ``POST /v1/tasks/calibrate`` and the OOD sweep, through
:mod:`assessors.onboarding.task_onboarding`.
"""
from assessors.task_calibration.calibration import TaskCalibration

__all__ = ["TaskCalibration"]
