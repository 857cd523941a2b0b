"""Parsers for sglang sources (being written)."""

from __future__ import annotations
