"""Fixtures for featurizer tests: a handful of real BBH and MuSR prompts."""
from __future__ import annotations

import csv

import pytest

FILES = ["bbh_boolean_expressions", "bbh_date_understanding", "bbh_web_of_lies", "musr_murder_mysteries"]


def _read(data_dir, name, n):
    path = data_dir / "open_llm_leaderboard_v2" / "prompts" / f"{name}_prompts.csv"
    csv.field_size_limit(10**8)
    with open(path, newline="", encoding="utf-8") as f:
        return [row["prompt"] for _, row in zip(range(n), csv.DictReader(f))]


@pytest.fixture(scope="session")
def prompts(data_dir) -> list[str]:
    """12 real prompts (3 per file, MuSR ones are long: they hit the 256-token truncation)."""
    return [p for name in FILES for p in _read(data_dir, name, 3)]


@pytest.fixture(scope="session")
def train_prompts(data_dir) -> list[str]:
    """120 real prompts to train word vectors and unigram statistics on."""
    return [p for name in FILES for p in _read(data_dir, name, 30)]
