"""Cairn core: no Qt, ever."""
