"""Onboard a new LLM: query reference prompts on an OpenAI-compatible endpoint, grade, journal.

Entry points: :class:`assessors.onboarding.client.Onboarder` (built from
``conf/onboarding/default.yaml``) and :func:`assessors.onboarding.client.onboard`; from the command
line, ``python predict.py mode=onboard`` (:mod:`assessors.tasks.onboard`).
"""
