"""Typed errors. Each names what is wrong and, where it can, what to do about it."""


class AssessorsError(Exception):
    """Base class for all errors raised by ``assessors``."""


class DataError(AssessorsError, ValueError):
    """Bad or inconsistent input data (names the file and the row or column)."""


class OfflineError(AssessorsError, RuntimeError):
    """A download was needed but the machine is offline or the source is unreachable."""


class ChecksumError(DataError):
    """A downloaded or cached file does not match its recorded checksum."""


class ConfigError(AssessorsError, ValueError):
    """An invalid combination of options (e.g. a reference set larger than the pool)."""


class InfeasibleError(ConfigError):
    """Valid options that the data at hand cannot support (a reference set larger than the pool).

    Distinct from a plain :class:`ConfigError` (a mistyped or out-of-range option): a grid sweep
    records an infeasible combination and moves on, but fails on a configuration mistake.
    """


class NoPosteriorError(ConfigError):
    """The model's assessor has no posterior over abilities: describing an LLM by answers on arbitrary
    prompts (evidence) or onboarding it adaptively needs a latent assessor (``assessor=latent``)."""


class TrackingError(AssessorsError, RuntimeError):
    """The configured experiment tracker cannot be reached (names the URI and the fix)."""
