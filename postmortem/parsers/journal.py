"""Parsers for journal sources (being written)."""

from __future__ import annotations
