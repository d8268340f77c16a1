"""Cairn window (PySide6)."""
