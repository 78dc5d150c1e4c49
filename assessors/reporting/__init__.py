"""Plots, tables and reports."""
