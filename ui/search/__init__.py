"""The search box and quick switcher (issue 22)."""
