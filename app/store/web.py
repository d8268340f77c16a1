"""Whether Claude may search and fetch the web in a workspace's chats: one row per workspace
that was ever set (``workspace_web``); no row reads as off, with the defaults."""

from __future__ import annotations

import json
import re

from app.base.db import Database
from app.base.paths import shown
from app.errors import Refused
from app.records import WebSettings

MAX_USES = 50  # searches one reply may make, at most (the person's choice is below it)
MAX_DOMAINS = 100
# A site as the API takes it: a host name, maybe with a path ("example.com", "docs.x.io/api").
_DOMAIN = re.compile(r"^(?=.{1,253}$)([a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,63}(/[\w./~%-]*)?$")


def checked_domain(domain: str) -> str:
    """*domain* as stored (lower case, no scheme, no trailing slash), or refused."""
    found = domain.strip().lower().removeprefix("https://").removeprefix("http://").rstrip("/")
    if not _DOMAIN.fullmatch(found):
        raise Refused(f"cannot use '{shown(domain[:100])}' as a web site: name a site like "
                      "example.com")
    return found


def checked(settings: WebSettings) -> WebSettings:
    """*settings* as they are stored (domains normalised and each once), or refused in one
    sentence."""
    uses = settings.max_uses
    if not isinstance(uses, int) or isinstance(uses, bool) or not 1 <= uses <= MAX_USES:
        raise Refused(f"cannot set the web searches per reply to '{shown(str(uses)[:20])}': "
                      f"it should be a whole number from 1 to {MAX_USES}")
    allowed = tuple(dict.fromkeys(checked_domain(d) for d in settings.allowed_domains))
    blocked = tuple(dict.fromkeys(checked_domain(d) for d in settings.blocked_domains))
    if allowed and blocked:
        raise Refused("cannot both allow and block web sites: list the sites Claude may use, "
                      "or the sites it may not, not both")
    if len(allowed) > MAX_DOMAINS or len(blocked) > MAX_DOMAINS:
        raise Refused(f"cannot list more than {MAX_DOMAINS} web sites")
    return WebSettings(bool(settings.enabled), uses, allowed, blocked)


class WebStore:
    def __init__(self, db: Database) -> None:
        self._db = db

    def get(self, ws_id: str) -> WebSettings | None:
        """The workspace's own settings; None when it was never set."""
        rows = self._db.query("SELECT enabled, max_uses, allowed_domains, blocked_domains"
                              " FROM workspace_web WHERE workspace_id = ?", (ws_id,))
        if not rows:
            return None
        enabled, uses, allowed, blocked = rows[0]
        return WebSettings(bool(enabled), int(uses), _domains(allowed), _domains(blocked))

    def set(self, ws_id: str, settings: WebSettings) -> WebSettings:
        settings = checked(settings)
        with self._db.write() as conn:
            conn.execute(
                "INSERT INTO workspace_web (workspace_id, enabled, max_uses, allowed_domains,"
                " blocked_domains) VALUES (?, ?, ?, ?, ?) ON CONFLICT (workspace_id) DO UPDATE"
                " SET enabled = excluded.enabled, max_uses = excluded.max_uses,"
                " allowed_domains = excluded.allowed_domains,"
                " blocked_domains = excluded.blocked_domains",
                (ws_id, int(settings.enabled), settings.max_uses,
                 json.dumps(list(settings.allowed_domains)),
                 json.dumps(list(settings.blocked_domains))))
        return settings


def _domains(stored: str) -> tuple[str, ...]:
    try:
        value = json.loads(stored)
    except (TypeError, ValueError, RecursionError):
        return ()
    return tuple(d for d in value if isinstance(d, str)) if isinstance(value, list) else ()
