"""Settings, the API key, and the models list.

The window calls these through :class:`app.ops.Operations`; each runs on the storage thread
through the part's ``run`` / ``read`` (:mod:`app.ops.part`)."""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any, TypeVar

from app.errors import Refused
from app.ops.part import Changes, Part

if TYPE_CHECKING:
    pass

log = logging.getLogger(__name__)

T = TypeVar("T")


class SettingsOperations(Part):
    """Settings, the API key, and the models list."""

    async def set_setting(self, key: str, value: Any) -> tuple[None, Changes]:
        return await self.run(lambda: self.cairn.settings.set(key, value))

    async def set_api_key(self, key: str) -> tuple[None, Changes]:
        """Into the system keychain, which can be slow or ask the person: never inline."""
        return await self.run(lambda: self.cairn.settings.set_api_key(key))

    async def forget_api_key(self) -> tuple[None, Changes]:
        return await self.run(self.cairn.settings.forget_api_key)

    async def has_api_key(self) -> bool:
        return await self.read(lambda: bool(self.cairn.settings.api_key()))

    async def refresh_models(self, *, force: bool = True) -> tuple[bool, BaseException | None]:
        """Fetch this server's models list (Settings' Test), or with ``force=False`` only when
        it is missing or a day old; whether a list is in, and if not the error that kept it.

        On the engine's network thread, the one loop its client may be used on: the SDK's
        connections belong to the loop that opened them: a list fetched on the window's loop
        made the next message's first attempt fail inside the client, and the SDK sent that
        message twice.  Refused (:class:`~app.errors.CairnError`) without a usable key.
        """
        engine, catalog = self.cairn.engine, self.cairn.catalog
        client = await engine.client_async()
        server = engine.server()
        if not force:
            await engine.network.run(lambda: catalog.ensure_fresh(client, server))
            return not catalog.stale(server), None
        error = await engine.network.run(lambda: catalog.fetch(client, server))
        return error is None, error

    async def test_connection(self, *, key: str | None, base_url: str | None,
                              plain_http: bool = False
                              ) -> tuple[str, int | None, BaseException | None]:
        """Settings' Test: ask *base_url*'s server (None: the stored one; '' Anthropic's or
        ``ANTHROPIC_BASE_URL``) for its models list with *key* (None: the stored key),
        storing nothing — not the key, not the URL, not the list.  Returns the server asked,
        how many models it listed (None when it gave no list) and the error that kept it.
        Refused (:class:`~app.errors.CairnError`) without a usable key, and for plain http
        to another machine unless *plain_http* (the person just agreed to it)."""
        import os

        from app.base.logs import without_credentials
        from app.llm.client import make_client
        from app.store.settings import reason_to_refuse

        settings, engine = self.cairn.settings, self.cairn.engine
        url = settings.base_url() if base_url is None else (
            base_url or os.environ.get("ANTHROPIC_BASE_URL") or "")
        reason = reason_to_refuse("api.base_url", url) if url else None
        if reason is not None:
            raise Refused(f"cannot test this base URL: {reason}")
        client = await asyncio.to_thread(make_client, settings, key=key, base_url=url,
                                         plain_http=plain_http)
        server = without_credentials(url or "https://api.anthropic.com")
        try:
            models, error = await engine.network.run(lambda: self.cairn.catalog.probe(client))
        finally:
            await engine.network.run(client.close)
        return server, None if models is None else len(models), error

    def models_server(self) -> str:
        """The server the models list is for (the base URL, or Anthropic's)."""
        return self.cairn.engine.server()
