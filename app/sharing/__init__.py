"""Sharing: the ``.cairn`` bundle format, its checks, export and all-or-nothing import."""
