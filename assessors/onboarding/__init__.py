"""Onboard a new LLM: query reference prompts on an OpenAI-compatible endpoint, grade, journal.

Entry points: :class:`assessors.onboarding.client.Onboarder` (built from
``conf/onboarding/default.yaml``), :func:`assessors.onboarding.client.onboard`, and the
command line ``python -m assessors.onboarding``.
"""
