"""Settings in SQLite (read once, then from memory); the API key in the system keychain only."""

from __future__ import annotations

import json
import logging
import os
from typing import Any

from app.db import Database
from app.errors import Refused

log = logging.getLogger(__name__)

KEYRING_SERVICE = "Cairn"
KEYRING_USER = "anthropic-api-key"

# The current models (November 2026; claude-sonnet-4-5 retired on 2026-11-30).  The one place
# these names live: the models endpoint decides everything else about them.
CHAT_MODEL = "claude-sonnet-5-5"
KNOWLEDGE_MODEL = "claude-haiku-5-5"

DEFAULTS: dict[str, Any] = {
    "model.chat": CHAT_MODEL,
    "model.knowledge": KNOWLEDGE_MODEL,
    "model.chat_effort": "",  # empty: the model's own default
    "model.knowledge_effort": "low",  # the rebuild is bookkeeping: keep it cheap
    "api.base_url": "",  # empty: ANTHROPIC_BASE_URL, else Anthropic's own
    "memory.enabled": True,  # personal memory goes to the model (spec 000: on by default)
    "knowledge.idle_seconds": 20,
}


# Settings that take one of a few values ("" means the model's own default).
CHOICES: dict[str, tuple[str, ...]] = {
    "model.chat_effort": ("", "low", "medium", "high", "xhigh", "max"),
    "model.knowledge_effort": ("", "low", "medium", "high", "xhigh", "max"),
}

_UNREAD = object()


class Settings:
    def __init__(self, db: Database) -> None:
        self._db = db
        self._keychain: object = _UNREAD  # the key as last read from (or saved to) the keychain
        self._values = {key: json.loads(value)
                        for key, value in db.query("SELECT key, value FROM setting")}

    def get(self, key: str) -> Any:
        if key not in DEFAULTS:
            raise KeyError(key)
        return self._values.get(key, DEFAULTS[key])

    def set(self, key: str, value: Any) -> None:
        if key not in DEFAULTS:
            raise Refused(f"cannot change setting '{key}': there is no such setting")
        if type(value) is not type(DEFAULTS[key]):
            raise Refused(f"cannot change setting '{key}': expected "
                          f"{type(DEFAULTS[key]).__name__}, got {type(value).__name__}")
        if key in CHOICES and value not in CHOICES[key]:
            shown = ", ".join(repr(c) if c else "'' (the model's default)" for c in CHOICES[key])
            raise Refused(f"cannot change setting '{key}': '{value}' is not one of {shown}")
        if key in ("model.chat", "model.knowledge") and not value.strip():
            raise Refused(f"cannot change setting '{key}': a model name cannot be empty")
        with self._db.write() as conn:
            conn.execute("INSERT OR REPLACE INTO setting (key, value) VALUES (?, ?)",
                         (key, json.dumps(value)))
        self._values[key] = value

    # ----------------------------------------------------------------- the API key

    def api_key(self) -> str | None:
        """``ANTHROPIC_API_KEY`` when set, else the keychain's; never stored anywhere else.

        The keychain is asked once per process (it can be slow, or ask the person), then the
        key is remembered in memory only.
        """
        from_env = os.environ.get("ANTHROPIC_API_KEY", "").strip()
        if from_env:
            return from_env
        if self._keychain is _UNREAD:
            import keyring  # loaded on first use: it costs a noticeable part of start-up
            import keyring.errors

            try:
                found = keyring.get_password(KEYRING_SERVICE, KEYRING_USER) or None
            except keyring.errors.KeyringError as error:
                log.warning("the system keychain could not be read: %s", type(error).__name__)
                return None
            if found is None:
                return None  # not remembered: `cairn key set` in a terminal is seen at once
            self._keychain = found
        return self._keychain  # type: ignore[return-value]

    def set_api_key(self, key: str) -> None:
        key = key.strip()
        if not key:
            raise Refused("cannot save the API key: it is empty")
        import keyring
        import keyring.errors

        try:
            keyring.set_password(KEYRING_SERVICE, KEYRING_USER, key)
        except keyring.errors.KeyringError as error:
            raise Refused("cannot save the API key: the system keychain refused it "
                          f"({type(error).__name__})") from error
        self._keychain = key

    def forget_api_key(self) -> None:
        import keyring
        import keyring.errors

        try:
            keyring.delete_password(KEYRING_SERVICE, KEYRING_USER)
        except keyring.errors.PasswordDeleteError:
            pass  # nothing stored: already forgotten
        except keyring.errors.KeyringError as error:
            raise Refused("cannot forget the API key: the system keychain is not available "
                          f"({type(error).__name__})") from error
        self._keychain = _UNREAD

    def base_url(self) -> str | None:
        """The setting, else ``ANTHROPIC_BASE_URL``, else None (Anthropic's own)."""
        return self.get("api.base_url") or os.environ.get("ANTHROPIC_BASE_URL") or None
