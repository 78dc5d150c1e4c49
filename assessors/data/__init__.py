"""Data layer: the Results object, loaders, splits and validation."""
from assessors.data.results import Results

__all__ = ["Results"]
