"""Parsers for nvidia sources (being written)."""

from __future__ import annotations
