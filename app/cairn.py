"""Cairn's core services on one data folder: what the window and the command line call."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import TYPE_CHECKING

from app.base.live import NetworkThread, StorageThread
from app.store.messages import ChatStore
from app.store.registry.registry import Registry
from app.store.registry.state import FirstPaint
from app.store.settings import Settings

if TYPE_CHECKING:
    from app.chat.engine import ChatEngine
    from app.chat.turn import TurnResult
    from app.knowledge.cairn_file import CairnFileSync
    from app.knowledge.rebuild import Rebuilder
    from app.knowledge.scheduler import KnowledgeScheduler
    from app.llm.catalog import Catalog
    from app.store.documents import KnowledgeStore
    from app.store.files import FileStore
    from app.store.folder_access import FolderStore
    from app.store.mcp import McpStore
    from app.store.search import Finder
    from app.store.web import WebStore
    from app.tools.folder_reading import FolderReader
    from app.tools.mcp import McpTools
    from app.tools.mcp_client import McpServers, ServerTool


class Cairn:
    """Opens the registry and builds the stores and the chat engine on its database."""

    def __init__(self, registry: Registry, *, background_rebuilds: bool = True) -> None:
        self.registry = registry
        db = registry.db
        hub = registry.hub  # every store announces its changes there, after commit
        self.settings = Settings(db, hub=hub)
        self.chats = ChatStore(db, hub=hub)
        # The other stores are made at first use (under one lock: any thread may ask first),
        # as are the chat engine and the rebuilder below: their modules cost ~70 ms to
        # import, and the window's filled paint (the sidebar) needs none of them.
        self._made_lock = threading.RLock()
        self._knowledge: KnowledgeStore | None = None
        self._folders: FolderStore | None = None
        self._web: WebStore | None = None
        self._mcp: McpStore | None = None
        self._mcp_servers: McpServers | None = None
        self._mcp_tools: McpTools | None = None
        self._folder_reader: FolderReader | None = None
        self._cairn_file_sync: CairnFileSync | None = None
        self._files: FileStore | None = None
        self._search: Finder | None = None
        self._catalog: Catalog | None = None
        # One storage thread for turns, rebuilds and the window's operations (``ops`` takes
        # ``writer``): their writes never hold up the event loop, and land one at a time.
        self.storage = StorageThread()
        self.writer = self.storage.executor
        # One network thread for every model call (turns, rebuilds, the models list): the SDK
        # builds, encodes and parses there, never on the event loop.
        self.network = NetworkThread()
        self._background_rebuilds = background_rebuilds
        self._engine: ChatEngine | None = None
        self._rebuilder: Rebuilder | None = None
        self._scheduler: KnowledgeScheduler | None = None

    @property
    def knowledge(self) -> KnowledgeStore:
        if self._knowledge is None:
            self._make_knowledge()
        assert self._knowledge is not None
        return self._knowledge

    @property
    def folders(self) -> FolderStore:
        if self._folders is None:
            self._make_knowledge()
        assert self._folders is not None
        return self._folders

    @property
    def cairn_file_sync(self) -> CairnFileSync:
        if self._cairn_file_sync is None:
            self._make_knowledge()
        assert self._cairn_file_sync is not None
        return self._cairn_file_sync

    def _make_knowledge(self) -> None:
        """The documents' store with CAIRN.md's keeper, made together: the keeper hooks every
        read of a document (its outside edits taken in) and hears every save (the file
        written after the version's commit), so no document is read or saved without it."""
        from app.knowledge.cairn_file import CairnFileSync
        from app.knowledge.placing import placed
        from app.store.documents import KnowledgeStore
        from app.store.folder_access import FolderStore

        with self._made_lock:
            if self._cairn_file_sync is not None:
                return
            db, hub = self.registry.db, self.registry.hub
            knowledge = KnowledgeStore(db, hub=hub)
            knowledge.placing = placed  # suggestions record where their entries stand
            folders = FolderStore(db)
            files = CairnFileSync(registry=self.registry, knowledge=knowledge,
                                   folders=folders, hub=hub)
            self._knowledge, self._folders = knowledge, folders
            self._cairn_file_sync = files

    @property
    def files(self) -> FileStore:
        if self._files is None:
            from app.store.blobs import BlobStore
            from app.store.files import FileStore

            with self._made_lock:
                if self._files is None:
                    db = self.registry.db
                    self._files = FileStore(db, BlobStore(db.path.parent / "files"),
                                            hub=self.registry.hub)
        return self._files

    @property
    def web(self) -> WebStore:
        """Web search and fetch per workspace (off unless turned on)."""
        if self._web is None:
            from app.store.web import WebStore

            with self._made_lock:
                if self._web is None:
                    self._web = WebStore(self.registry.db)
        return self._web

    @property
    def mcp(self) -> McpStore:
        """The MCP servers as configured (app/store/mcp.py); never starts one."""
        if self._mcp is None:
            from app.store.mcp import McpStore

            with self._made_lock:
                if self._mcp is None:
                    self._mcp = McpStore(self.registry.db)
        return self._mcp

    @property
    def mcp_servers(self) -> McpServers:
        """The MCP servers that run (none until a chat uses one)."""
        if self._mcp_servers is None:
            from app.tools.mcp_client import McpServers

            with self._made_lock:
                if self._mcp_servers is None:
                    self._mcp_servers = McpServers()
        return self._mcp_servers

    def running_mcp_tools(self, name: str) -> list[ServerTool] | None:
        """The tools of the MCP server *name* as it listed them, when it runs now; None when
        it does not (asking never starts it, nor the SDK)."""
        servers = self._mcp_servers
        owner = servers.owner(name) if servers is not None else None
        return list(owner.tools) if owner is not None and owner.running else None

    def stop_mcp_servers(self) -> None:
        """Every MCP server this process started stopped (at the end of a command), within
        3 s; nothing when none was."""
        if self._mcp_servers is not None:
            servers, self._mcp_servers = self._mcp_servers, None
            servers.close()
            if self._mcp_tools is not None:  # a later use makes a new set
                self._mcp_tools.servers = self.mcp_servers

    @property
    def mcp_tools(self) -> McpTools:
        """The MCP servers' tools as the toolbox offers them (made with the engine)."""
        if self._mcp_tools is None:
            self._make_engine()
        assert self._mcp_tools is not None
        return self._mcp_tools

    @property
    def search(self) -> Finder:
        """Find anything; its index is checked on its first use."""
        if self._search is None:
            from app.store.search import Finder

            blobs = self.files.blobs
            with self._made_lock:
                if self._search is None:
                    self._search = Finder(self.registry.db, blobs.read)
        return self._search

    @property
    def catalog(self) -> Catalog:
        if self._catalog is None:
            from app.llm.catalog import Catalog

            with self._made_lock:
                if self._catalog is None:
                    self._catalog = Catalog(self.registry.db.path.parent)
        return self._catalog

    @property
    def engine(self) -> ChatEngine:
        if self._engine is None:
            self._make_engine()
        assert self._engine is not None
        return self._engine

    @property
    def folder_reader(self) -> FolderReader:
        """What answers the folder tools (made with the engine)."""
        if self._folder_reader is None:
            self._make_engine()
        assert self._folder_reader is not None
        return self._folder_reader

    @property
    def rebuilder(self) -> Rebuilder:
        if self._rebuilder is None:
            self._make_engine()
        assert self._rebuilder is not None
        return self._rebuilder

    def _make_engine(self) -> None:
        from app.chat.engine import ChatEngine
        from app.knowledge.rebuild import Rebuilder
        from app.tools import Toolbox
        from app.tools.folder_reading import FolderReader, folder_tools
        from app.tools.workspace_files import ReadWorkspaceFile

        with self._made_lock:  # (the storage thread may ask first: a chat's knowledge)
            if self._engine is not None:
                return
            registry = self.registry
            # The tools Claude can use, each on the toolbox's workers (never the writer).
            reader = self._folder_reader = FolderReader(registry, self.folders, self.files)
            from app.tools.mcp import McpTools

            self._mcp_tools = McpTools(store=self.mcp, servers=self.mcp_servers,
                                       registry=registry, storage=self.storage,
                                       blobs=self.files.blobs)
            toolbox = Toolbox([ReadWorkspaceFile(self.files), *folder_tools(reader)],
                              sources=[self._mcp_tools])
            engine = ChatEngine(registry=registry, chats=self.chats, knowledge=self.knowledge,
                                files=self.files, settings=self.settings, catalog=self.catalog,
                                storage=self.storage, network=self.network,
                                toolbox=toolbox, web=self.web)
            self._rebuilder = Rebuilder(registry=registry, chats=self.chats,
                                        knowledge=self.knowledge, settings=self.settings,
                                        client=engine.client, chain=engine.chain,
                                        catalog=self.catalog, models_ready=engine.models_ready,
                                        storage=self.storage, network=self.network)
            if self._background_rebuilds:  # the window; the command line rebuilds itself
                engine.knowledge_waiting = self._knowledge_waiting
                engine.turn_listeners.append(self._after_turn)
                engine.start_listeners.append(self._turn_starting)
            self._engine = engine

    @property
    def scheduler(self) -> KnowledgeScheduler:
        """The rebuild's timers; made on first use, inside the running event loop."""
        if self._scheduler is None:
            from app.knowledge.scheduler import KnowledgeScheduler

            self._scheduler = KnowledgeScheduler(self.rebuilder, self.registry, self.settings)
        return self._scheduler

    async def drain_rebuilds(self, timeout: float) -> None:
        """At quit: what waits to be rebuilt runs, for at most *timeout* seconds (nothing,
        when no rebuild was ever scheduled in this process)."""
        if self._scheduler is not None:
            await self._scheduler.drain(timeout=timeout)

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
        engine = self._engine
        if self._mcp_servers is not None:  # every server stopped, together, within 3 s
            self._mcp_servers.close()
        if engine is not None:
            engine.toolbox.close()
        self.network.close(last=engine.close_client if engine is not None else None)
        self.storage.close()  # what was asked for is stored first
        self.registry.close()
