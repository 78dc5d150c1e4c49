"""The tasks of ``train.py`` and ``predict.py``: one module per task, the only code that reads the config.

Each task is a function ``task(cfg)`` that ``conf/train.yaml`` (or an experiment preset) and
``conf/predict.yaml`` name in ``task._target_``; :func:`assessors.tasks.wrapper.task_wrapper` runs it
in a tracking run. Components below this package take arrays, fitted objects and plain parameters.
"""
