"""Settings in SQLite (read once, then from memory); the API key in the system keychain only."""

from __future__ import annotations

import json
import logging
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from app.base.db import Database
from app.base.logs import without_credentials
from app.base.paths import shown
from app.errors import Refused
from app.events import Hub, SettingChanged

log = logging.getLogger(__name__)

KEYRING_SERVICE = "Cairn"
KEYRING_USER = "anthropic-api-key"  # Anthropic's own server: the entry every key had before
ANTHROPIC_URL = "https://api.anthropic.com"
# The setting row (not a setting a person changes) listing the servers whose keychain entry
# was copied once from the old shared entry; see Settings._migrated_key.
_MIGRATED = "api.key_migrated"


def server_of(base_url: str | None) -> str | None:
    """The server a key belongs to, as its keychain entry names it: the base URL with its
    scheme and host in lower case and no trailing slash; None for Anthropic's own."""
    if not base_url or not base_url.strip():
        return None
    parts = urlsplit(base_url.strip())
    scheme, host = parts.scheme.lower(), (parts.hostname or "").lower()
    try:
        port = f":{parts.port}" if parts.port is not None else ""
    except ValueError:
        port = ""
    if ":" in host:  # an IPv6 address keeps its brackets
        host = f"[{host}]"
    url = f"{scheme}://{host}{port}{parts.path.rstrip('/')}"
    return None if url == ANTHROPIC_URL else url


def key_user(base_url: str | None) -> str:
    """The keychain entry ("user") of the key for *base_url*: Anthropic's keeps today's name,
    so nothing moves for most people; another server's names its URL."""
    server = server_of(base_url)
    return KEYRING_USER if server is None else f"{KEYRING_USER} {server}"


def key_owner(base_url: str | None) -> str:
    """The server a key belongs to, in a sentence: "Anthropic" or "the server at HOST"."""
    server = server_of(base_url)
    if server is None:
        return "Anthropic"
    parts = urlsplit(server)
    where = parts.netloc + (parts.path if parts.path not in ("", "/") else "")
    return f"the server at {shown(where)}"

# The current models (November 2026; claude-sonnet-4-5 retired on 2026-11-30).  The one place
# these names live: the models endpoint decides everything else about them.
CHAT_MODEL = "claude-sonnet-5-5"
KNOWLEDGE_MODEL = "claude-haiku-5-5"

# The idle delay before a rebuild: from at once to a day (a longer one is a mistake).
MAX_IDLE_SECONDS = 86_400

_UNREAD = object()


def reason_to_refuse(key: str, value: Any) -> str | None:
    """Why *value* cannot be setting *key*, as the tail of a sentence; None when it can:
    the wrong type, a value not among its choices or outside its range, then its own check."""
    setting = SETTINGS[key]
    expected = type(setting.default)
    if type(value) is not expected:
        words = {bool: "on or off", int: "a whole number", str: "text"}
        return f"expected {words.get(expected, expected.__name__)}"
    if setting.choices and value not in setting.values():
        listed = ", ".join(repr(c) if c else "'' (the model's default)"
                           for c in setting.values())
        return f"'{_shown(value)}' is not one of {listed}"
    if setting.range is not None and not setting.range[0] <= value <= setting.range[1]:
        low, high = setting.range
        given = f"{value:,} {setting.unit} is too long: " if 0 < value < 10**12 else ""
        return f"{given}{setting.range_said or f'from {low:,} to {high:,}'}"
    return setting.check(value) if setting.check is not None else None


def _model_reason(value: str) -> str | None:
    if not value.strip():
        return "a model name cannot be empty"
    if any(char.isspace() or not char.isprintable() for char in value):
        return (f"'{_shown(value)}' is not a model name: a model name has no spaces or "
                "control characters")
    if len(value) > 200:
        return "a model name is at most 200 characters"
    return None


def _base_url_reason(value: str) -> str | None:
    return _url_reason(value) if value else None


def _plain_http_reason(value: str) -> str | None:
    if not value:
        return None
    return _url_reason(value) or (
        None if plain_http_host(value) and origin(value) == value else
        f"'{_shown(value)}' is not a plain http address of another machine, such as "
        "http://192.168.1.20:11434 (https and this machine's own need no permission)")


def plain_http_host(url: str) -> str | None:
    """The host of a plain ``http://`` URL that leaves this machine (the API key would cross
    the network unencrypted); None for https, for loopback (``localhost``, 127.0.0.0/8,
    ``::1``: a local server) and for what is not a URL."""
    import ipaddress

    try:
        parts = urlsplit(url.strip())
        host = (parts.hostname or "").rstrip(".")
    except ValueError:
        return None
    if parts.scheme.lower() != "http" or not host:
        return None
    if host == "localhost" or host.endswith(".localhost"):
        return None  # RFC 6761: always this machine
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return host  # a name: it may resolve anywhere
    mapped = getattr(address, "ipv4_mapped", None)
    return None if address.is_loopback or (mapped is not None and mapped.is_loopback) \
        else host


def origin(url: str) -> str:
    """``http://host:port`` of *url* (the port said even when it is 80), lower case: what
    the person's agreement to plain http names."""
    parts = urlsplit(url.strip())
    host = (parts.hostname or "").rstrip(".")
    host = f"[{host}]" if ":" in host else host
    return f"{parts.scheme.lower()}://{host}:{parts.port or 80}"


def plain_http_warning(url: str) -> str:
    """What Settings and the command line say of a plain-http base URL to another machine."""
    return (f"{without_credentials(url)} is plain http to another machine "
            f"({plain_http_host(url)}): your API key and your chats would cross the network "
            "unencrypted, readable by anyone on the way. Use https, or a server on this "
            "machine.")


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


@dataclass(frozen=True)
class Setting:
    """One setting, declared once: the store checks with it, ``cairn settings`` lists,
    refuses and completes with it, and the Settings dialog builds its field from it."""

    key: str
    default: Any  # its type is the setting's type (bool, int or str)
    label: str  # how a sentence names it (a refusal, `cairn settings list`), never the key
    about: str  # one sentence: what it does
    choices: tuple[tuple[str, str], ...] = ()  # (value, how the dialog shows it)
    range: tuple[int, int] | None = None  # a whole number's lowest and highest
    range_said: str = ""  # the refusal's tail for a number out of range
    unit: str = ""  # a number's unit ("seconds")
    check: Callable[[Any], str | None] | None = None  # the rest of the refusal, or None
    # In the Settings dialog (empty: not shown there): its page, the field's accessible
    # name, the form row's label (or a check box's text), a tooltip, and how the dialog's
    # messages name it ("The idle delay was changed outside this window").
    page: str = ""
    field: str = ""
    row: str = ""
    tip: str = ""
    said: str = ""

    def values(self) -> tuple[str, ...]:
        return tuple(value for value, _shown in self.choices)


_EFFORTS = (("", "Model's default"), ("low", "Low"), ("medium", "Medium"), ("high", "High"),
            ("xhigh", "Extra high"), ("max", "Max"))

# Every setting, in the order `cairn settings` lists them.  Adding one: a line here (the
# dialog shows it on its page with a field made for its type; see docs/ARCHITECTURE.md).
_DECLARED = (
    Setting("model.chat", CHAT_MODEL, "Chat model", "The model chats use.",
            check=_model_reason, page="models", field="Chat model", said="The chat model"),
    Setting("model.knowledge", KNOWLEDGE_MODEL, "Knowledge model",
            "The model that merges a quiet chat into the knowledge and personal memory.",
            check=_model_reason, page="models", field="Knowledge model",
            said="The knowledge model"),
    Setting("model.chat_effort", "", "Chat effort",
            "How hard the chat model thinks ('' is the model's own default).",
            choices=_EFFORTS, page="models", field="Chat effort", said="The chat effort"),
    Setting("model.knowledge_effort", "low", "Knowledge effort",
            "How hard the knowledge model thinks (low: the rebuild is bookkeeping).",
            choices=_EFFORTS, page="models", field="Knowledge effort",
            said="The knowledge effort"),
    Setting("api.base_url", "", "Base URL",
            "The server Cairn talks to (empty: ANTHROPIC_BASE_URL, else Anthropic's own).",
            check=_base_url_reason, page="connection", field="Base URL",
            said="The base URL"),
    Setting("api.plain_http", "", "Plain http allowed to",
            "The one plain-http server on another machine you agreed to send your key to "
            "(http://host:port; empty: none; loopback needs no agreement).",
            check=_plain_http_reason),
    Setting("memory.enabled", True, "Memory",
            "Whether your personal memory goes with every message.",
            page="memory", field="Memory", row="Use personal memory in chats",
            said="The Memory switch"),
    Setting("knowledge.idle_seconds", 20, "Knowledge idle delay",
            "How long a chat stays quiet before its knowledge is updated.",
            range=(0, MAX_IDLE_SECONDS), unit="seconds",
            range_said=f"the delay is from 0 to {MAX_IDLE_SECONDS:,} seconds (a day)",
            page="models", field="Idle delay", row="Update after",
            tip="How long a chat stays quiet before its knowledge is updated",
            said="The idle delay"),
    Setting("chat.enter_sends", True, "Enter sends",
            "Enter sends and Shift+Enter starts a new line (off: swapped; Ctrl+Enter always "
            "sends).",
            page="models", field="Enter sends", row="Enter sends, Shift+Enter starts a new line",
            tip="Off: Enter starts a new line and Shift+Enter sends (Ctrl+Enter always sends)",
            said="The Enter switch"),
)
SETTINGS: dict[str, Setting] = {setting.key: setting for setting in _DECLARED}

# Views of the table (taken at import), for the code that reads one column.
DEFAULTS: dict[str, Any] = {key: s.default for key, s in SETTINGS.items()}
LABELS: dict[str, str] = {key: s.label for key, s in SETTINGS.items()}
CHOICES: dict[str, tuple[str, ...]] = {key: s.values() for key, s in SETTINGS.items()
                                       if s.choices}


class Settings:
    """Settings, read once and then served from memory.  With a *hub*, each saved setting is
    announced there (``SettingChanged``) after its commit, on the committing thread."""

    def __init__(self, db: Database, *, hub: Hub | None = None) -> None:
        self._db = db
        self._hub = hub
        self._keychain: object = _UNREAD  # the key as last read from (or saved to) the keychain
        self._keychain_user = KEYRING_USER  # … and the entry (the server) it came from
        # Why the keychain could not be read, when it could not: "the system keychain is not
        # available (…)"; the sentence for a missing key says it instead of "no key".
        self.keychain_problem: str | None = None
        self._values: dict[str, Any] = self._stored()

    def _stored(self) -> dict[str, Any]:
        values: dict[str, Any] = {}
        for key, raw in self._db.query("SELECT key, value FROM setting"):
            if key not in SETTINGS:
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
        changed = [key for key, setting in SETTINGS.items()
                   if stored.get(key, setting.default) != self.get(key)]
        self._values = stored
        if self._hub is not None:
            for key in changed:
                self._hub.emit(SettingChanged(key))
        return changed

    def get(self, key: str) -> Any:
        if key not in SETTINGS:
            raise KeyError(key)
        return self._values.get(key, SETTINGS[key].default)

    def set(self, key: str, value: Any) -> None:
        if key not in SETTINGS:
            raise Refused(f"cannot change setting '{_shown(key)}': there is no such setting")
        reason = reason_to_refuse(key, value)
        if reason is not None:
            raise Refused(f"cannot change setting '{SETTINGS[key].label}': {reason}")
        with self._db.write() as conn:
            conn.execute("INSERT OR REPLACE INTO setting (key, value) VALUES (?, ?)",
                         (key, json.dumps(value)))
        self._values[key] = value
        if self._hub is not None:
            self._hub.emit(SettingChanged(key))

    # ----------------------------------------------------------------- the API key

    def api_key(self) -> str | None:
        """``ANTHROPIC_API_KEY`` when set, else the keychain's key for the server of the base
        URL (one entry per server); never stored anywhere else.

        The keychain is asked once per process and server (it can be slow, or ask the
        person), then the key is remembered in memory only.  When the keychain cannot be
        asked at all, :attr:`keychain_problem` says why.
        """
        from_env = os.environ.get("ANTHROPIC_API_KEY", "").strip()
        if from_env:
            return from_env
        user = key_user(self.base_url())
        if self._keychain is _UNREAD or self._keychain_user != user:
            try:
                found = _keychain("get", user=user)
                if found is None and user != KEYRING_USER:
                    found = self._migrated_key(user)
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
            self._keychain, self._keychain_user = found, user
        return self._keychain  # type: ignore[return-value]

    def _migrated_key(self, user: str) -> str | None:
        """Before one key per server, every key was kept under Anthropic's entry, whatever
        the base URL: with a custom one set, that key was the one its server got.  Copied to
        the server's own entry once (never moved: another data folder may use it for
        Anthropic), and never again, so that a key forgotten stays forgotten."""
        server = user[len(KEYRING_USER) + 1:]
        done = self._migrated()
        if server in done:
            return None
        old = _keychain("get")
        if old is not None:
            _keychain("set", old, user=user)
            if _keychain("get", user=user) != old:  # a keychain that kept nothing
                return None
            log.info("the API key was copied to the keychain entry of its server")
        with self._db.write() as conn:
            conn.execute("INSERT OR REPLACE INTO setting (key, value) VALUES (?, ?)",
                         (_MIGRATED, json.dumps(sorted({*done, server}))))
        return old

    def _migrated(self) -> frozenset[str]:  # (not set[str]: `set` is a method here)
        for (raw,) in self._db.query("SELECT value FROM setting WHERE key = ?", (_MIGRATED,)):
            try:
                found = json.loads(raw)
            except (TypeError, ValueError, RecursionError):
                return frozenset()
            return frozenset(s for s in found if isinstance(s, str)) \
                if isinstance(found, list) else frozenset()
        return frozenset()

    def key_owner(self) -> str:
        """Whose key Settings and ``cairn key`` speak of: "Anthropic", "the server at …"."""
        return key_owner(self.base_url())

    def set_api_key(self, key: str) -> None:
        """Store *key* in the keychain entry of the base URL's server, then read it back: a
        keychain that keeps nothing (a null backend, a locked store that drops writes) is
        refused, not trusted."""
        key = key.strip()
        if not key:
            raise Refused("cannot save the API key: it is empty")
        user = key_user(self.base_url())
        try:
            _keychain("set", key, user=user)
            kept = _keychain("get", user=user)
        except _Unavailable as error:
            raise Refused(f"cannot save the API key: {error.sentence}; set ANTHROPIC_API_KEY "
                          "instead") from None
        if kept != key:
            raise Refused("cannot save the API key: the system keychain accepted it but "
                          f"{'kept nothing' if kept is None else 'kept something else'}, so "
                          "Cairn would not find it; set ANTHROPIC_API_KEY instead")
        self._keychain, self._keychain_user = key, user
        self.keychain_problem = None

    def forget_api_key(self) -> None:
        """Remove the key of the base URL's server (another server's key stays)."""
        try:
            _keychain("delete", user=key_user(self.base_url()))
        except _Unavailable as error:
            raise Refused(f"cannot forget the API key: {error.sentence}") from None
        self._keychain = _UNREAD

    def base_url(self) -> str | None:
        """The setting, else ``ANTHROPIC_BASE_URL``, else None (Anthropic's own)."""
        return self.get("api.base_url") or os.environ.get("ANTHROPIC_BASE_URL") or None

    def plain_http_refusal(self, url: str | None) -> str | None:
        """Why the key is not sent to *url*: plain http to another machine the person has
        not agreed to (``api.plain_http``); None when it may be."""
        if not url or plain_http_host(url) is None:
            return None
        if self.get("api.plain_http") == origin(url):
            return None
        return (f"Cairn did not send your API key: {plain_http_warning(url)} To send it "
                f"anyway, confirm it in Settings or run `cairn settings set api.plain_http "
                f"{origin(url)}`.")


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


def no_key_sentence(problem: str | None, owner: str = "Anthropic") -> str:
    """What a turn (or the window's first look) says when there is no key: with a keychain
    that cannot keep one, the environment variable, as Settings says it."""
    if problem:
        also = (", or install and unlock GNOME Keyring or KWallet"
                if sys.platform.startswith("linux") else "")
        return (f"No API key: {problem.rstrip('.')}. Set ANTHROPIC_API_KEY to give Cairn "
                f"your key{also}.")
    whose = "your Anthropic API key" if owner == "Anthropic" else f"the API key for {owner}"
    return (f"No API key is set. Add {whose} in Settings or with `cairn key set` "
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
