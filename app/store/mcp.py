"""MCP servers as the person configured them: defined once, in Claude Desktop's shape, and
turned on per workspace; a policy per tool per workspace (ask, allow, off).

``{"mcpServers": {name: {"command", "args", "env"}}}`` for a program Cairn starts (stdio),
``{"url", "headers"}`` for streamable HTTP.  The *values* of ``env`` and ``headers`` are
secrets (API keys, tokens): they go to the keychain, only their names to the database, and
never to a log.  Any other key of a server's entry (``"disabled"``, ``"type"``…) is kept as it
was given.  A server runs only where it was turned on: an imported one is off everywhere.
"""

from __future__ import annotations

import json
import os
import re
import stat
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from app.base.db import Database, utc_now
from app.base.paths import shown
from app.errors import Refused
from app.store.settings import secret

# A server's name, as the person types it and Claude Desktop's files hold it.  Spaces and dots
# are allowed here (they are made valid for the API's tool names, and mapped back).
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9 ._-]{0,47}$")
_ENV_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")
_HEADER_KEY = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,128}$")  # an HTTP token
MAX_SERVERS = 200
MAX_ARGS = 200
MAX_VALUE = 16_384  # one argument, command, env value or header, in characters
ASK, ALLOW, OFF = "ask", "allow", "off"
POLICIES = (ASK, ALLOW, OFF)
_USED = ("command", "args", "env", "url", "headers")


@dataclass(frozen=True, slots=True)
class ServerConfig:
    """One server.  ``env`` and ``headers`` hold their values only in memory (read from or
    bound for the keychain); ``extra`` is every key of the entry Cairn does not use."""

    name: str
    command: str | None = None
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    url: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    extra: Mapping[str, Any] = field(default_factory=dict)
    imported: bool = False

    @property
    def transport(self) -> str:
        return "http" if self.url else "stdio"

    def to_json(self, *, secrets: bool = False) -> dict[str, Any]:
        """Claude Desktop's entry; the values of env and headers shown as "…" unless
        *secrets* (never printed, never logged)."""
        entry: dict[str, Any] = dict(self.extra)
        if self.url:
            entry["url"] = self.url
            if self.headers:
                entry["headers"] = {k: (v if secrets else "…") for k, v in self.headers.items()}
        else:
            entry["command"] = self.command
            entry["args"] = list(self.args)
            if self.env:
                entry["env"] = {k: (v if secrets else "…") for k, v in self.env.items()}
        return entry


def check_name(name: str, verb: str = "add the MCP server") -> str:
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise Refused(f"cannot {verb} '{shown(str(name)[:60])}': a server's name is 1 to 48 "
                      "letters, digits, spaces, dots, dashes or underscores, starting with a "
                      "letter or digit")
    return name


def checked(config: ServerConfig) -> ServerConfig:
    """*config* as it is stored, or refused in one sentence."""
    name = check_name(config.name)
    verb = f"add the MCP server '{name}'"
    if bool(config.command) == bool(config.url):
        raise Refused(f"cannot {verb}: give either a command to run or a URL, not "
                      f"{'both' if config.command else 'neither'}")
    if config.url:
        if config.env or config.args:
            raise Refused(f"cannot {verb}: a server at a URL takes headers, not a command's "
                          "arguments or environment")
        parts = urlsplit(config.url)
        if parts.scheme not in ("http", "https") or not parts.hostname or \
                any(c.isspace() or not c.isprintable() for c in config.url):
            raise Refused(f"cannot {verb}: '{shown(config.url[:100])}' is not an http or https "
                          "URL with a host")
        if parts.username or parts.password:
            raise Refused(f"cannot {verb}: put credentials in a header, not in the URL")
    else:
        if config.headers:
            raise Refused(f"cannot {verb}: headers are for a server at a URL")
        if len(config.args) > MAX_ARGS:
            raise Refused(f"cannot {verb}: it has more than {MAX_ARGS} arguments")
    for value in (config.command or "", config.url or "", *config.args):
        if not isinstance(value, str) or len(value) > MAX_VALUE or "\0" in value:
            raise Refused(f"cannot {verb}: its command, URL and arguments must be text of at "
                          f"most {MAX_VALUE:,} characters")
    for kind, pattern, values in (("environment variable", _ENV_KEY, config.env),
                                  ("header", _HEADER_KEY, config.headers)):
        for key, value in values.items():
            if not isinstance(key, str) or not pattern.fullmatch(key):
                raise Refused(f"cannot {verb}: '{shown(str(key)[:60])}' is not a valid "
                              f"{kind} name")
            if not isinstance(value, str) or len(value) > MAX_VALUE or "\0" in value or \
                    (kind == "header" and any(c in value for c in "\r\n")):
                raise Refused(f"cannot {verb}: the value of {kind} {key} must be one line of "
                              f"text of at most {MAX_VALUE:,} characters")
    return config


def from_entry(name: str, entry: Any, *, imported: bool = False) -> ServerConfig:
    """A server from Claude Desktop's entry ``{"command", "args", "env"}`` or
    ``{"url", "headers"}``, checked; other keys kept in ``extra``."""
    check_name(name)
    if not isinstance(entry, dict):
        raise Refused(f"cannot add the MCP server '{name}': its entry is not an object")
    args, env, headers = entry.get("args", []), entry.get("env", {}), entry.get("headers", {})
    if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
        raise Refused(f"cannot add the MCP server '{name}': args must be a list of text")
    if not isinstance(env, dict) or not isinstance(headers, dict):
        raise Refused(f"cannot add the MCP server '{name}': env and headers must be objects")
    for key in ("command", "url"):
        if key in entry and not isinstance(entry[key], str):
            raise Refused(f"cannot add the MCP server '{name}': {key} must be text")
    extra = {k: v for k, v in entry.items() if k not in _USED}
    return checked(ServerConfig(name, command=entry.get("command") or None, args=tuple(args),
                                env=dict(env), url=entry.get("url") or None,
                                headers=dict(headers), extra=extra, imported=imported))


def claude_desktop_file() -> Path:
    """Where Claude Desktop keeps its configuration on this system."""
    home = Path.home()
    if sys.platform == "darwin":
        return home / "Library" / "Application Support" / "Claude" / "claude_desktop_config.json"
    if sys.platform == "win32":
        appdata = os.environ.get("APPDATA")
        base = Path(appdata) if appdata else home / "AppData" / "Roaming"
        return base / "Claude" / "claude_desktop_config.json"
    config = os.environ.get("XDG_CONFIG_HOME")
    return (Path(config) if config else home / ".config") / "Claude" / "claude_desktop_config.json"


MAX_CONFIG_BYTES = 4_000_000


def read_claude_desktop(path: Path | None = None) -> list[ServerConfig]:
    """Every server of Claude Desktop's file (its own, or *path*), checked, all or none."""
    path = path or claude_desktop_file()
    where = shown(str(path))
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):  # a FIFO would block, a device not end
            raise Refused(f"cannot import from Claude Desktop: {where} is not a file")
        with open(path, "rb") as handle:
            data = handle.read(MAX_CONFIG_BYTES + 1)
    except FileNotFoundError:
        raise Refused(f"cannot import from Claude Desktop: there is no file {where}") from None
    except ValueError:  # a NUL in the path
        raise Refused(f"cannot import from Claude Desktop: {where} is not a file's path") from None
    except OSError as error:
        raise Refused(f"cannot import from Claude Desktop: {where} could not be read "
                      f"({error.strerror or type(error).__name__})") from None
    if len(data) > MAX_CONFIG_BYTES:
        raise Refused(f"cannot import from Claude Desktop: {where} is larger than "
                      f"{MAX_CONFIG_BYTES // 1_000_000} MB, which no configuration is")
    try:
        parsed = json.loads(data.decode("utf-8-sig"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise Refused(f"cannot import from Claude Desktop: {where} is not JSON") from None
    servers = parsed.get("mcpServers") if isinstance(parsed, dict) else None
    if not isinstance(servers, dict):
        raise Refused(f"cannot import from Claude Desktop: {where} has no \"mcpServers\" object")
    if len(servers) > MAX_SERVERS:
        raise Refused(f"cannot import from Claude Desktop: {where} names more than "
                      f"{MAX_SERVERS} servers")
    return [from_entry(name, entry, imported=True) for name, entry in servers.items()]


def pairs(text: str, kind: str, name: str) -> dict[str, str]:
    """``KEY=VALUE`` lines (the window's fields; a header may be ``Name: value`` as it is
    usually written) as a mapping, or refused in one sentence naming the line."""
    found: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        key, sep, value = line.partition("=")
        if kind == "header" and (not sep or ":" in key):
            key, sep, value = line.partition(":")
            value = value.strip()
        key = key.strip()
        if not sep or not key:
            form = "Name: value" if kind == "header" else "KEY=VALUE"
            raise Refused(f"cannot add the MCP server '{shown(name[:60])}': line {number} of "
                          f"its {kind}s is not {form}")
        found[key] = value
    return found


def from_fields(name: str, *, command: str = "", arguments: str = "", env: str = "",
                url: str = "", headers: str = "") -> ServerConfig:
    """A server as the window's form gives it: a command and its arguments one per line
    (no quoting to get wrong), or a URL; env and headers as lines.  Checked as
    :meth:`McpStore.add` checks it."""
    name = name.strip()
    check_name(name)
    command, url = command.strip(), url.strip()
    return checked(ServerConfig(
        name, command=command or None,
        args=tuple(a for a in arguments.splitlines() if a.strip()),
        env=pairs(env, "environment variable", name), url=url or None,
        headers=pairs(headers, "header", name)))


@dataclass(frozen=True, slots=True)
class InWorkspace:
    """A server as a workspace's Tools page shows it: whether it is on there (or in its
    project, for a folder), and the policies set there (tool → allow or off; ask is none)."""

    config: ServerConfig
    on: bool
    on_above: bool
    policies: Mapping[str, str]
    above: Mapping[str, str] = field(default_factory=dict)  # its project's (they apply here
    # too, where this workspace sets none: ask is no row)


def _secret_user(name: str, kind: str, key: str) -> str:
    return f"mcp:{name}:{kind}:{key}"


class McpStore:
    """The servers, where each is on, and the tools' policies.  Secrets are read from the
    keychain when a server is about to start (``secrets``), never when listing."""

    def __init__(self, db: Database) -> None:
        self._db = db

    # ----------------------------------------------------------------- servers

    def servers(self) -> list[ServerConfig]:
        """Every server, by name, without the values of its secrets."""
        rows = self._db.query("SELECT name, config, secret_keys, imported FROM mcp_server"
                              " ORDER BY name COLLATE NOCASE")
        return [_config(*row) for row in rows]

    def get(self, name: str, *, verb: str = "use the MCP server") -> ServerConfig:
        if not isinstance(name, str) or not _NAME.fullmatch(name):  # (none was ever stored)
            raise Refused(f"cannot {verb} '{shown(str(name)[:60])}': there is no such server")
        rows = self._db.query("SELECT name, config, secret_keys, imported FROM mcp_server"
                              " WHERE name = ?", (name,))
        if not rows:
            raise Refused(f"cannot {verb} '{shown(str(name)[:60])}': there is no such server")
        return _config(*rows[0])

    def with_secrets(self, config: ServerConfig) -> ServerConfig:
        """*config* with the values of its env and headers, from the keychain (a value the
        keychain lost is left out: the server says what it misses)."""
        def values(kind: str, keys: Mapping[str, str]) -> dict[str, str]:
            found = {k: secret("get", _secret_user(config.name, kind, k)) for k in keys}
            return {k: v for k, v in found.items() if v is not None}

        return ServerConfig(config.name, config.command, config.args, values("env", config.env),
                            config.url, values("headers", config.headers), config.extra,
                            config.imported)

    def add(self, config: ServerConfig) -> ServerConfig:
        """Store a new server (its secrets in the keychain first); a name taken is refused."""
        config = checked(config)
        if self._db.query("SELECT 1 FROM mcp_server WHERE name = ? COLLATE NOCASE",
                          (config.name,)):
            raise Refused(f"cannot add the MCP server '{config.name}': a server of that name "
                          "exists; remove it first")
        if len(self.servers()) >= MAX_SERVERS:
            raise Refused(f"cannot add the MCP server '{config.name}': Cairn keeps at most "
                          f"{MAX_SERVERS} servers")
        self._put_secrets(config)
        entry = config.to_json()
        entry.pop("env", None)
        entry.pop("headers", None)
        keys = {"env": list(config.env), "headers": list(config.headers)}
        try:
            with self._db.write() as conn:
                conn.execute("INSERT INTO mcp_server (name, config, secret_keys, imported,"
                             " added_at) VALUES (?, ?, ?, ?, ?)",
                             (config.name, json.dumps(entry), json.dumps(keys),
                              int(config.imported), utc_now()))
        except BaseException:
            self._forget_secrets(config)
            raise
        return self.get(config.name)

    def import_servers(self, configs: list[ServerConfig]) -> tuple[list[str], list[str]]:
        """Add each server whose name is free; (added, kept as they were).  Off everywhere."""
        added, kept = [], []
        taken = {s.name.lower() for s in self.servers()}
        for config in configs:
            if config.name.lower() in taken:
                kept.append(config.name)
                continue
            self.add(ServerConfig(config.name, config.command, config.args, config.env,
                                  config.url, config.headers, config.extra, imported=True))
            taken.add(config.name.lower())
            added.append(config.name)
        return added, kept

    def remove(self, name: str) -> None:
        config = self.get(name, verb="remove the MCP server")
        with self._db.write() as conn:
            conn.execute("DELETE FROM mcp_server WHERE name = ?", (config.name,))
        self._forget_secrets(config)

    def _put_secrets(self, config: ServerConfig) -> None:
        """Each value to the keychain, read back: a keychain that keeps nothing is refused
        (and what was put is taken back), never trusted."""
        try:
            for kind, values in (("env", config.env), ("headers", config.headers)):
                for key, value in values.items():
                    user = _secret_user(config.name, kind, key)
                    secret("set", user, value)
                    if secret("get", user) != value:
                        raise Refused(f"cannot add the MCP server '{config.name}': the system "
                                      "keychain did not keep its secrets, so Cairn could not "
                                      "give them to it")
        except Refused:
            self._forget_secrets(config)
            raise

    def _forget_secrets(self, config: ServerConfig) -> None:
        for kind, values in (("env", config.env), ("headers", config.headers)):
            for key in values:
                try:
                    secret("delete", _secret_user(config.name, kind, key))
                except Refused:
                    pass  # the keychain went away: what it kept is unreachable by name anyway

    # ----------------------------------------------------------------- per workspace

    def turn_on(self, name: str, ws_id: str) -> None:
        config = self.get(name, verb="turn on the MCP server")
        with self._db.write() as conn:
            conn.execute("INSERT OR IGNORE INTO workspace_mcp (workspace_id, server)"
                         " VALUES (?, ?)", (ws_id, config.name))

    def turn_off(self, name: str, ws_id: str) -> None:
        config = self.get(name, verb="turn off the MCP server")
        with self._db.write() as conn:
            conn.execute("DELETE FROM workspace_mcp WHERE workspace_id = ? AND server = ?",
                         (ws_id, config.name))

    def on_in(self, ws_ids: list[str]) -> list[str]:
        """The servers on in any of these workspaces (a chat's chain: its project and its
        own), by name."""
        if not ws_ids:
            return []
        marks = ", ".join("?" * len(ws_ids))
        rows = self._db.query(f"SELECT DISTINCT server FROM workspace_mcp WHERE workspace_id"
                              f" IN ({marks}) ORDER BY server", tuple(ws_ids))
        return [r[0] for r in rows]

    def workspaces_of(self, name: str) -> list[str]:
        rows = self._db.query("SELECT workspace_id FROM workspace_mcp WHERE server = ?"
                              " ORDER BY workspace_id", (name,))
        return [r[0] for r in rows]

    def in_workspace(self, chain: list[str]) -> list[InWorkspace]:
        """Every server as seen from the last workspace of *chain* (its project first)."""
        if not chain:
            return []
        own, above = chain[-1], chain[:-1]
        on_here, on_above = set(self.on_in([own])), set(self.on_in(above))
        policies: dict[str, dict[str, str]] = {}
        for server, tool, policy in self._db.query(
                "SELECT server, tool, policy FROM mcp_tool_policy WHERE workspace_id = ?"
                " ORDER BY tool", (own,)):
            policies.setdefault(server, {})[tool] = policy
        inherited: dict[str, dict[str, str]] = {}
        for (server, tool), policy in self.policies(above).items():
            inherited.setdefault(server, {})[tool] = policy
        return [InWorkspace(c, c.name in on_here, c.name in on_above,
                            policies.get(c.name, {}), inherited.get(c.name, {}))
                for c in self.servers()]

    # ----------------------------------------------------------------- per tool

    def set_policy(self, name: str, tool: str, ws_id: str, policy: str) -> None:
        config = self.get(name, verb="set a tool's policy on the MCP server")
        if policy not in POLICIES:
            raise Refused(f"cannot set the policy of {config.name}.{shown(tool[:60])}: it is "
                          "ask, allow or off")
        if not tool or len(tool) > 128 or any(not c.isprintable() or "\ud800" <= c <= "\udfff"
                                              for c in tool):
            raise Refused(f"cannot set the policy of a tool of {config.name}: "
                          f"'{shown(tool[:60])}' is not a tool's name")
        with self._db.write() as conn:
            if policy == ASK:  # the default: no row
                conn.execute("DELETE FROM mcp_tool_policy WHERE workspace_id = ? AND server = ?"
                             " AND tool = ?", (ws_id, config.name, tool))
            else:
                conn.execute("INSERT OR REPLACE INTO mcp_tool_policy (workspace_id, server,"
                             " tool, policy) VALUES (?, ?, ?, ?)",
                             (ws_id, config.name, tool, policy))

    def policies(self, ws_ids: list[str]) -> dict[tuple[str, str], str]:
        """(server, tool) → policy for a chat's chain: the nearest workspace's (the last of
        *ws_ids*, its own) wins over its project's."""
        found: dict[tuple[str, str], str] = {}
        for ws_id in ws_ids:  # the project first, the chat's own workspace last
            for server, tool, policy in self._db.query(
                    "SELECT server, tool, policy FROM mcp_tool_policy WHERE workspace_id = ?",
                    (ws_id,)):
                found[(server, tool)] = policy
        return found


def _config(name: str, stored: str, secret_keys: str, imported: int) -> ServerConfig:
    try:
        entry = json.loads(stored)
        keys = json.loads(secret_keys)
    except (TypeError, ValueError, RecursionError):
        entry, keys = {}, {}
    entry = entry if isinstance(entry, dict) else {}
    keys = keys if isinstance(keys, dict) else {}
    args = entry.get("args", [])
    return ServerConfig(
        name, command=entry.get("command") or None,
        args=tuple(a for a in args if isinstance(a, str)) if isinstance(args, list) else (),
        env={k: "" for k in keys.get("env", []) if isinstance(k, str)},
        url=entry.get("url") or None,
        headers={k: "" for k in keys.get("headers", []) if isinstance(k, str)},
        extra={k: v for k, v in entry.items() if k not in _USED}, imported=bool(imported))
