"""What the console shows: short warnings, no third-party chatter, tracebacks only when asked for.

Hydra's logging config (``conf/hydra/job_logging/assessors.yaml``) gives the console handler
:class:`ConsoleFilter` and :class:`ConsoleFormatter`; the file handler (the run folder's
``<task>.log``) keeps every record in full. One rule shortens a long line (:func:`shorten`), for log
records and for the notes a task prints.
"""
from __future__ import annotations

import logging
import os
from pathlib import Path

from assessors.secrets import redact_text

#: Environment variable that, set to 1/true, shows INFO records and tracebacks on the console.
VERBOSE_ENV = "ASSESSORS_VERBOSE"
#: Loggers (and their children) whose warnings reach the console (others' only from ERROR up; all reach
#: the log file): the project's, and Hydra's and its launcher plugins' (a sweep's jobs).
PROJECT_LOGGERS = ("assessors", "__main__", "hydra", "hydra_plugins")
#: ``extra`` key of a record that goes to the log file only (e.g. a traceback already summarised).
FILE_ONLY = "file_only"
#: Console lines are cut to about this many characters.
MAX_CHARS = 240
_CUTS = (": ", ", e.g. ", "; e.g. ", " e.g. ")

_state = {"verbose": os.environ.get(VERBOSE_ENV, "").lower() in ("1", "true", "yes"), "warnings": 0,
          "project_level": logging.WARNING}


def shorten(text: str, limit: int = MAX_CHARS, where: str = "the log file") -> str:
    """``text`` cut before its list of names when longer than ``limit`` characters.

    The cut falls at the last ``": "`` or ``"e.g."`` before the limit (where the messages of the
    project start their lists of LLMs, prompts or files) unless only a bare label precedes it, else
    at the last space before the limit.
    """
    text = " ".join(text.split("\n")) if "\n" in text else text
    if len(text) <= limit:
        return text
    head = text[:limit]
    cut = max(head.rfind(c) for c in _CUTS)
    if " " not in head[:max(cut, 0)]:  # no cut, or one after a bare label ("Big-Bench-Hard: ...")
        cut = head.rfind(" ") if head.rfind(" ") > limit // 2 else limit
    return f"{text[:cut].rstrip(',;: ')} [... full text in {where}]"


def set_verbose(on: bool) -> None:
    """Show INFO records and tracebacks on the console (``verbose=true``) or not."""
    _state["verbose"] = bool(on) or _state["verbose"]
    if _state["verbose"]:
        for h in console_handlers():
            h.setLevel(logging.INFO)


def show_project_info() -> None:
    """Show the project's INFO records on the console too (a sweep's progress: which job runs, which
    combination is skipped); third-party records and tracebacks stay in the log file."""
    _state["project_level"] = logging.INFO
    for h in console_handlers():
        h.setLevel(min(h.level, logging.INFO))


def verbose() -> bool:
    return _state["verbose"]


def warnings_shown() -> int:
    """How many warnings the console has shown in this process."""
    return _state["warnings"]


def console_handlers() -> list[logging.Handler]:
    """The root logger's handlers that write to a terminal stream (not to a file)."""
    return [h for h in logging.getLogger().handlers
            if isinstance(h, logging.StreamHandler) and not isinstance(h, logging.FileHandler)]


def log_file() -> Path | None:
    """The file the root logger writes to (Hydra's ``<run folder>/<task>.log``), if any."""
    for h in logging.getLogger().handlers:
        if isinstance(h, logging.FileHandler) and h.baseFilename != os.devnull:
            return Path(h.baseFilename)
    return None


class ConsoleFilter(logging.Filter):
    """Lets through the project's warnings, everyone's errors, and everything when verbose.

    Records marked ``extra={"file_only": True}`` stay out unless verbose.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        if _state["verbose"]:
            return True
        if getattr(record, FILE_ONLY, False):
            return False
        ours = record.name.split(".", 1)[0] in PROJECT_LOGGERS
        keep = record.levelno >= logging.ERROR or (ours and record.levelno >= _state["project_level"])
        if keep and record.levelno == logging.WARNING:
            _state["warnings"] += 1
        return keep


class ConsoleFormatter(logging.Formatter):
    """``LEVEL message`` with long warnings shortened (:func:`shorten`) and no traceback unless verbose.

    Errors are shown whole: their message ends with the fix (``Set ASSESSORS_DATA_DIR ...``), which a
    cut before the list of names would drop.
    """

    def __init__(self, fmt: str = "%(levelname)s %(message)s", **kwargs) -> None:
        super().__init__(fmt, **kwargs)

    def format(self, record: logging.LogRecord) -> str:
        if _state["verbose"]:
            return super().format(record)
        where = log_file()
        text = record.getMessage()
        if record.exc_info and record.exc_info[1] is not None:  # no traceback here: the error in one line
            err = record.exc_info[1]
            text = redact_text(f"{text}: {type(err).__name__}: {' '.join(str(err).split())}")
        if record.levelno < logging.ERROR:
            text = shorten(text, where=where.name if where else "the log file")
        return self._fmt % {**record.__dict__, "message": text} if self._fmt else text
