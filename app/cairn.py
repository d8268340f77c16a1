"""Cairn's core services on one data folder: what the window and the command line call."""

from __future__ import annotations

import asyncio
from pathlib import Path

from app.base.live import NetworkThread, StorageThread
from app.chat.engine import ChatEngine
from app.chat.folder import FolderReader
from app.chat.turn import TurnResult
from app.knowledge.rebuild import Rebuilder
from app.knowledge.scheduler import KnowledgeScheduler
from app.llm.catalog import Catalog
from app.store.blobs import BlobStore
from app.knowledge.cairn_file import KnowledgeFiles
from app.store.files import FileStore
from app.store.folder import FolderStore
from app.store.knowledge import KnowledgeStore
from app.store.messages import ChatStore
from app.store.registry.registry import Registry
from app.store.registry.state import FirstPaint
from app.store.search import Finder
from app.store.settings import Settings


class Cairn:
    """Opens the registry and builds the stores and the chat engine on its database."""

    def __init__(self, registry: Registry, *, background_rebuilds: bool = True) -> None:
        self.registry = registry
        db = registry.db
        hub = registry.hub  # every store announces its changes there, after commit
        self.settings = Settings(db, hub=hub)
        self.chats = ChatStore(db, hub=hub)
        self.knowledge = KnowledgeStore(db, hub=hub)
        # CAIRN.md in the workspaces that asked for it: written after each version's commit,
        # its outside edits taken in by every read of the document.
        self.folders = FolderStore(db)
        self.knowledge_files = KnowledgeFiles(registry=registry, knowledge=self.knowledge,
                                              folders=self.folders, hub=hub)
        self.knowledge_files.relearn = self._relearn
        self.files = FileStore(db, BlobStore(db.path.parent / "files"), hub=hub)
        self.search = Finder(db, self.files.blobs.read)  # checked on its first use
        self.catalog = Catalog(db.path.parent)
        # One storage thread for turns, rebuilds and the window's operations (``ops`` takes
        # ``writer``): their writes never hold up the event loop, and land one at a time.
        self.storage = StorageThread()
        self.writer = self.storage.executor
        # One network thread for every model call (turns, rebuilds, the models list): the SDK
        # builds, encodes and parses there, never on the event loop.
        self.network = NetworkThread()
        self.engine = ChatEngine(registry=registry, chats=self.chats, knowledge=self.knowledge,
                                 files=self.files, settings=self.settings, catalog=self.catalog,
                                 storage=self.storage, network=self.network)
        self.engine.folder = FolderReader(registry, self.folders, self.files)
        self.rebuilder = Rebuilder(registry=registry, chats=self.chats, knowledge=self.knowledge,
                                   settings=self.settings, client=self.engine.client,
                                   chain=self.engine.chain, catalog=self.catalog,
                                   models_ready=self.engine.models_ready, storage=self.storage,
                                   network=self.network)
        self._scheduler: KnowledgeScheduler | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        if background_rebuilds:  # the window; the command line rebuilds before it exits
            self.engine.knowledge_waiting = self._knowledge_waiting
            self.engine.turn_listeners.append(self._after_turn)
            self.engine.start_listeners.append(self._turn_starting)

    @property
    def scheduler(self) -> KnowledgeScheduler:
        """The rebuild's timers; made on first use, inside the running event loop."""
        if self._scheduler is None:
            self._scheduler = KnowledgeScheduler(self.rebuilder, self.registry, self.settings)
            try:  # the loop CAIRN.md's outside edits hand their rebuilds to (see _relearn)
                self._loop = asyncio.get_running_loop()
            except RuntimeError:  # made outside a loop (a test patching it): set on first use
                self._loop = None
        return self._scheduler

    def _relearn(self, chat_ids: tuple[str, ...]) -> None:
        """An outside edit of CAIRN.md replaced these chats' rebuilds: learned again on top of
        it now (from any thread; the command line's next trigger does it otherwise)."""
        if self._scheduler is not None and self._loop is not None:
            scheduler = self._scheduler
            try:
                self._loop.call_soon_threadsafe(scheduler.rebuild_now, chat_ids)
            except RuntimeError:  # the loop is closed (quitting): the next trigger learns it
                pass

    def _turn_starting(self, chat_id: str) -> None:
        if self._scheduler is not None:
            self._scheduler.turn_started(chat_id)

    def _after_turn(self, result: TurnResult) -> None:
        # Whatever this turn was (a short "thanks", a stop, a failure), an earlier qualifying
        # exchange may still wait: the chat is idle from now on either way.
        if result.knowledge_waiting:
            self.scheduler.exchange_finished(result.chat_id)

    def _knowledge_waiting(self, chat_id: str) -> bool:
        """Asked by the turn on the storage thread, before it ends."""
        return any(e.qualifies for e in self.rebuilder.pending(chat_id))

    @classmethod
    def open(cls, data_folder: Path | None = None, *, background_rebuilds: bool = True,
             first: FirstPaint | None = None) -> Cairn:
        """*first*: what the window's first paint shows, read first (the rest in pages:
        ``Operations.load_rest``); None reads every chat now."""
        return cls(Registry.open(data_folder, first=first),
                   background_rebuilds=background_rebuilds)

    def close(self) -> None:
        # The client's connections close on their own loop; a call still running is cancelled.
        self.network.close(last=self.engine.close_client)
        self.storage.close()  # what was asked for is stored first
        self.registry.close()
