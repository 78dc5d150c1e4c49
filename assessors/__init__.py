"""assessors: predict whether an LLM will succeed on a prompt before running it."""
__version__ = "0.1.0"
