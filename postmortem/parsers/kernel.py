"""Parsers for kernel sources (being written)."""

from __future__ import annotations
