"""Cairn's core services on one data folder: what the window and the command line call."""

from __future__ import annotations

from pathlib import Path

from app.blobs import BlobStore
from app.catalog import Catalog
from app.chats import ChatStore
from app.conversation import ChatEngine, TurnResult
from app.files import FileStore
from app.knowledge.rebuild import Rebuilder
from app.knowledge.scheduler import KnowledgeScheduler
from app.knowledge.store import KnowledgeStore
from app.registry import Registry
from app.settings import Settings


class Cairn:
    """Opens the registry and builds the stores and the chat engine on its database."""

    def __init__(self, registry: Registry, *, background_rebuilds: bool = True) -> None:
        self.registry = registry
        db = registry.db
        self.settings = Settings(db)
        self.chats = ChatStore(db)
        self.knowledge = KnowledgeStore(db)
        self.files = FileStore(db, BlobStore(db.path.parent / "files"))
        self.catalog = Catalog(db.path.parent)
        self.engine = ChatEngine(registry=registry, chats=self.chats, knowledge=self.knowledge,
                                 files=self.files, settings=self.settings, catalog=self.catalog)
        self.rebuilder = Rebuilder(registry=registry, chats=self.chats, knowledge=self.knowledge,
                                   settings=self.settings, client=self.engine.client,
                                   chain=self.engine.chain, catalog=self.catalog,
                                   models_ready=self.engine.models_ready)
        self._scheduler: KnowledgeScheduler | None = None
        if background_rebuilds:  # the window; the command line rebuilds before it exits
            self.engine.turn_listeners.append(self._after_turn)
            self.engine.start_listeners.append(self._turn_starting)

    @property
    def scheduler(self) -> KnowledgeScheduler:
        """The rebuild's timers; made on first use, inside the running event loop."""
        if self._scheduler is None:
            self._scheduler = KnowledgeScheduler(self.rebuilder, self.registry, self.settings)
        return self._scheduler

    def _turn_starting(self, chat_id: str) -> None:
        if self._scheduler is not None:
            self._scheduler.turn_started(chat_id)

    def _after_turn(self, result: TurnResult) -> None:
        # Whatever this turn was (a short "thanks", a stop, a failure), an earlier qualifying
        # exchange may still wait: the chat is idle from now on either way.
        if any(e.qualifies for e in self.rebuilder.pending(result.chat_id)):
            self.scheduler.exchange_finished(result.chat_id)

    @classmethod
    def open(cls, data_folder: Path | None = None, *, background_rebuilds: bool = True) -> Cairn:
        return cls(Registry.open(data_folder), background_rebuilds=background_rebuilds)

    def close(self) -> None:
        self.registry.close()
