"""What Cairn writes is the person's: the data folder, the database, its WAL, the logs, the
models cache and migration backups are readable by this user only, and a proxy's
credentials in the base URL reach neither the log nor the models cache."""

from __future__ import annotations

import asyncio
import logging
import os
import stat
from pathlib import Path

import pytest

from app.base import logs
from app.base.db import Database
from app.base.logs import without_credentials
from app.cairn import Cairn
from app.llm.catalog import Catalog

pytestmark = pytest.mark.skipif(os.name != "posix", reason="POSIX modes")


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_the_data_folder_and_the_database_are_private(isolated):
    cairn = Cairn.open(isolated)
    try:
        cairn.registry.add_workspace(str(isolated.parent))  # a write: the WAL exists
        assert mode(isolated) == 0o700
        for name in ("cairn.db", "cairn.db-wal", "cairn.db-shm"):
            assert mode(isolated / name) == 0o600, name
    finally:
        cairn.close()


def test_an_existing_data_folder_is_made_private_when_opened(isolated):
    Cairn.open(isolated).close()
    os.chmod(isolated, 0o755)
    os.chmod(isolated / "cairn.db", 0o644)
    Cairn.open(isolated).close()
    assert mode(isolated) == 0o700 and mode(isolated / "cairn.db") == 0o600


def test_a_migration_backup_is_private(isolated):
    Cairn.open(isolated).close()
    database = Database.open(isolated)
    try:
        database._backup(1)
    finally:
        database.close()
    (backup,) = isolated.glob("cairn-v1-*.db.bak")
    assert mode(backup) == 0o600


def test_the_log_is_private_and_never_holds_a_proxys_password(isolated):
    logs.setup_logging()
    logging.getLogger("httpx").info("HTTP Request: %s %s", "POST",
                                    "http://ana:s3cret@proxy.example:8080/v1/messages")
    for handler in logging.getLogger().handlers:
        handler.flush()
    log = isolated / "logs" / "cairn.log"
    assert mode(log.parent) == 0o700 and mode(log) == 0o600
    text = log.read_text()
    assert "s3cret" not in text and "http://***@proxy.example:8080/v1/messages" in text


def test_the_models_cache_is_private_and_names_the_server_without_credentials(
        isolated, online):
    cairn = online
    cairn.settings.set("api.base_url", cairn.settings.base_url().replace(
        "http://", "http://ana:s3cret@"))
    server = cairn.engine.server()
    assert "s3cret" not in server
    catalog = Catalog(isolated)

    async def fetch() -> bool:
        client = await cairn.engine.client_async()  # (its base URL keeps the credentials)
        return await catalog.refresh(client, server)

    assert asyncio.run(fetch())
    cache = isolated / "models.json"
    assert mode(cache) == 0o600 and "s3cret" not in cache.read_text()


def test_credentials_are_taken_out_of_any_url_in_a_sentence():
    assert without_credentials("Cannot reach http://u:p@10.0.0.1:3128/v1; check it") == (
        "Cannot reach http://***@10.0.0.1:3128/v1; check it")
    assert without_credentials("mail ana@example.com") == "mail ana@example.com"
