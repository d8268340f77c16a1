"""The search box and quick switcher."""
