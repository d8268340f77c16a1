"""Settings: the dialog (``dialog``) and one module per page — ``connection`` (the API key,
the base URL), ``models`` (models, effort, Enter, the idle delay), ``memory`` (personal
memory), ``tools`` (MCP servers) — built on ``form`` (the grid, and a field for each declared
setting of ``app.store.settings.SETTINGS``)."""

from ui.settings.connection import failure_sentence, keychain_problem
from ui.settings.dialog import SettingsDialog
from ui.settings.models import model_label

__all__ = ["SettingsDialog", "failure_sentence", "keychain_problem", "model_label"]
