"""Settings in SQLite (read once, then from memory); the API key in the system keychain only."""

from __future__ import annotations

import json
import logging
import os
import sys
from typing import Any
from urllib.parse import urlsplit

from app.base.db import Database
from app.base.paths import shown
from app.errors import Refused
from app.events import Hub, SettingChanged

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
    "memory.enabled": True,  # personal memory goes to the model (on by default)
    "knowledge.idle_seconds": 20,
    "chat.enter_sends": True,  # Enter sends and Shift+Enter breaks the line (off: swapped)
}


# How a sentence names each setting: the label Settings shows, never the key.
LABELS: dict[str, str] = {
    "model.chat": "Chat model",
    "model.knowledge": "Knowledge model",
    "model.chat_effort": "Chat effort",
    "model.knowledge_effort": "Knowledge effort",
    "api.base_url": "Base URL",
    "memory.enabled": "Memory",
    "knowledge.idle_seconds": "Knowledge idle delay",
    "chat.enter_sends": "Enter sends",
}

# Settings that take one of a few values ("" means the model's own default).
CHOICES: dict[str, tuple[str, ...]] = {
    "model.chat_effort": ("", "low", "medium", "high", "xhigh", "max"),
    "model.knowledge_effort": ("", "low", "medium", "high", "xhigh", "max"),
}

# The idle delay before a rebuild: from at once to a day (a longer one is a mistake).
MAX_IDLE_SECONDS = 86_400

_UNREAD = object()


def reason_to_refuse(key: str, value: Any) -> str | None:
    """Why *value* cannot be setting *key*, as the tail of a sentence; None when it can."""
    expected = type(DEFAULTS[key])
    if type(value) is not expected:
        words = {bool: "on or off", int: "a whole number", str: "text"}
        return f"expected {words.get(expected, expected.__name__)}"
    if key in CHOICES and value not in CHOICES[key]:
        listed = ", ".join(repr(c) if c else "'' (the model's default)" for c in CHOICES[key])
        return f"'{_shown(value)}' is not one of {listed}"
    if key in ("model.chat", "model.knowledge"):
        if not value.strip():
            return "a model name cannot be empty"
        if any(char.isspace() or not char.isprintable() for char in value):
            return (f"'{_shown(value)}' is not a model name: a model name has no spaces or "
                    "control characters")
        if len(value) > 200:
            return "a model name is at most 200 characters"
    if key == "knowledge.idle_seconds" and not 0 <= value <= MAX_IDLE_SECONDS:
        given = f"{value:,} seconds is too long: " if 0 < value < 10**12 else ""
        return f"{given}the delay is from 0 to {MAX_IDLE_SECONDS:,} seconds (a day)"
    if key == "api.base_url" and value:
        return _url_reason(value)
    return None


def _url_reason(url: str) -> str | None:
    bad = f"'{_shown(url)}' is not an http or https URL with a host, such as http://localhost:11434"
    if any(char.isspace() or not char.isprintable() for char in url):
        return bad
    try:
        parts = urlsplit(url)
        _ = parts.port  # raises ValueError for a port that is not a number from 0 to 65535
    except ValueError:
        return bad
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        return bad
    return None


def _shown(value: str) -> str:
    """A value inside a sentence: one printable line, and not a page long."""
    return shown(value if len(value) <= 200 else value[:200] + "…")


class Settings:
    """Settings, read once and then served from memory.  With a *hub*, each saved setting is
    announced there (``SettingChanged``) after its commit, on the committing thread."""

    def __init__(self, db: Database, *, hub: Hub | None = None) -> None:
        self._db = db
        self._hub = hub
        self._keychain: object = _UNREAD  # the key as last read from (or saved to) the keychain
        # Why the keychain could not be read, when it could not: "the system keychain is not
        # available (…)"; the sentence for a missing key says it instead of "no key".
        self.keychain_problem: str | None = None
        self._values: dict[str, Any] = self._stored()

    def _stored(self) -> dict[str, Any]:
        values: dict[str, Any] = {}
        for key, raw in self._db.query("SELECT key, value FROM setting"):
            if key not in DEFAULTS:
                continue  # a setting of a newer Cairn: kept, not used
            try:
                value = json.loads(raw)
            except (TypeError, ValueError, RecursionError):
                log.warning("setting %s holds no valid value; using the default", key)
                continue
            if reason_to_refuse(key, value) is not None:
                log.warning("setting %s holds a value Cairn cannot use; using the default", key)
                continue
            values[key] = value
        return values

    def reload(self) -> list[str]:
        """Catch up with settings another process saved (``cairn settings set``): the keys
        whose value changed, each announced as ``SettingChanged``.  One small read."""
        stored = self._stored()
        changed = [key for key in DEFAULTS
                   if stored.get(key, DEFAULTS[key]) != self.get(key)]
        self._values = stored
        if self._hub is not None:
            for key in changed:
                self._hub.emit(SettingChanged(key))
        return changed

    def get(self, key: str) -> Any:
        if key not in DEFAULTS:
            raise KeyError(key)
        return self._values.get(key, DEFAULTS[key])

    def set(self, key: str, value: Any) -> None:
        if key not in DEFAULTS:
            raise Refused(f"cannot change setting '{_shown(key)}': there is no such setting")
        reason = reason_to_refuse(key, value)
        if reason is not None:
            raise Refused(f"cannot change setting '{LABELS.get(key, key)}': {reason}")
        with self._db.write() as conn:
            conn.execute("INSERT OR REPLACE INTO setting (key, value) VALUES (?, ?)",
                         (key, json.dumps(value)))
        self._values[key] = value
        if self._hub is not None:
            self._hub.emit(SettingChanged(key))

    # ----------------------------------------------------------------- the API key

    def api_key(self) -> str | None:
        """``ANTHROPIC_API_KEY`` when set, else the keychain's; never stored anywhere else.

        The keychain is asked once per process (it can be slow, or ask the person), then the
        key is remembered in memory only.  When the keychain cannot be asked at all,
        :attr:`keychain_problem` says why.
        """
        from_env = os.environ.get("ANTHROPIC_API_KEY", "").strip()
        if from_env:
            return from_env
        if self._keychain is _UNREAD:
            try:
                found = _keychain("get")
            except _Unavailable as error:
                log.warning("the system keychain could not be read: %s", error.kind)
                self.keychain_problem = error.sentence
                return None
            self.keychain_problem = None
            if found is None:
                # A keychain that keeps nothing (no service on this Linux, keyring's null
                # backend) answers "no key" forever: say so, as Settings does.
                self.keychain_problem = unusable_keychain()
                return None  # not remembered: `cairn key set` in a terminal is seen at once
            self._keychain = found
        return self._keychain  # type: ignore[return-value]

    def set_api_key(self, key: str) -> None:
        """Store *key* in the keychain, then read it back: a keychain that keeps nothing (a
        null backend, a locked store that drops writes) is refused, not trusted."""
        key = key.strip()
        if not key:
            raise Refused("cannot save the API key: it is empty")
        try:
            _keychain("set", key)
            kept = _keychain("get")
        except _Unavailable as error:
            raise Refused(f"cannot save the API key: {error.sentence}; set ANTHROPIC_API_KEY "
                          "instead") from None
        if kept != key:
            raise Refused("cannot save the API key: the system keychain accepted it but "
                          f"{'kept nothing' if kept is None else 'kept something else'}, so "
                          "Cairn would not find it; set ANTHROPIC_API_KEY instead")
        self._keychain = key
        self.keychain_problem = None

    def forget_api_key(self) -> None:
        try:
            _keychain("delete")
        except _Unavailable as error:
            raise Refused(f"cannot forget the API key: {error.sentence}") from None
        self._keychain = _UNREAD

    def base_url(self) -> str | None:
        """The setting, else ``ANTHROPIC_BASE_URL``, else None (Anthropic's own)."""
        return self.get("api.base_url") or os.environ.get("ANTHROPIC_BASE_URL") or None


class _Unavailable(Exception):
    """The keychain could not be asked; ``sentence`` says so, ``kind`` names the failure."""

    def __init__(self, sentence: str, kind: str) -> None:
        super().__init__(sentence)
        self.sentence = sentence
        self.kind = kind


def unusable_keychain() -> str | None:
    """Why the system keychain cannot keep a key (keyring's fail or null backend, or no
    backend at all), or None.  Slow the first time (it loads keyring): off the GUI thread."""
    try:
        import keyring
        from keyring.backends import chainer, fail, null

        backend = keyring.get_keyring()
    except Exception as error:  # noqa: BLE001 - a third-party backend may raise anything
        return f"the keychain could not be loaded ({type(error).__name__})"
    if isinstance(backend, (fail.Keyring, null.Keyring)):
        return "no usable system keychain was found"
    if isinstance(backend, chainer.ChainerBackend) and not backend.backends:
        return "no usable system keychain was found"
    return None


def no_key_sentence(problem: str | None) -> str:
    """What a turn (or the window's first look) says when there is no key: with a keychain
    that cannot keep one, the environment variable, as Settings says it."""
    if problem:
        also = (", or install and unlock GNOME Keyring or KWallet"
                if sys.platform.startswith("linux") else "")
        return (f"No API key: {problem.rstrip('.')}. Set ANTHROPIC_API_KEY to give Cairn "
                f"your key{also}.")
    return ("No API key is set. Add your Anthropic API key in Settings or with `cairn key set` "
            "(Cairn keeps it in your system keychain), or set ANTHROPIC_API_KEY.")


def secret(action: str, user: str, value: str = "") -> str | None:
    """Get, set or delete one secret of Cairn's in the keychain under *user* (an MCP server's
    env value or header, app/store/mcp.py); :class:`Refused` when the keychain cannot be
    asked.  Slow the first time (it loads keyring): off the GUI thread."""
    try:
        return _keychain(action, value, user=user)
    except _Unavailable as error:
        raise Refused(f"cannot use the keychain: {error.sentence}") from None


def _keychain(action: str, key: str = "", *, user: str = KEYRING_USER) -> str | None:
    """One call to the keychain.  Any failure, even a backend that cannot be loaded
    (``PYTHON_KEYRING_BACKEND=no.such.Backend`` raises ImportError), is :class:`_Unavailable`:
    keyring's backends raise whatever their platform raises."""
    try:
        import keyring  # loaded on first use: it costs a noticeable part of start-up
        import keyring.errors

        if action == "get":
            found = keyring.get_password(KEYRING_SERVICE, user)
            return found if isinstance(found, str) and found else None
        if action == "set":
            keyring.set_password(KEYRING_SERVICE, user, key)
            return None
        try:
            keyring.delete_password(KEYRING_SERVICE, user)
        except keyring.errors.PasswordDeleteError:
            pass  # nothing stored: already forgotten
        return None
    except Exception as error:  # noqa: BLE001 - a third-party backend may raise anything
        raise _Unavailable(_unavailable(error), type(error).__name__) from None


def _unavailable(error: BaseException) -> str:
    named = os.environ.get("PYTHON_KEYRING_BACKEND", "").strip()
    if named and isinstance(error, (ImportError, AttributeError, ValueError)):
        why = f"PYTHON_KEYRING_BACKEND names '{_shown(named)}', which cannot be loaded"
    elif type(error).__name__ == "NoKeyringError":
        why = "no keychain service was found on this system"
    else:
        why = "it failed when asked"
    return f"the system keychain is not available ({why})"
