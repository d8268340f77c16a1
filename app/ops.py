"""The operations the window calls: named, async, and never on the caller's thread.

Each operation runs its storage, file, keyring and heavy-import work on one writer thread and returns ``(result, Changes)``: the result, or the refusal as
:class:`~app.errors.CairnError`, and the typed events the change emitted, so a caller can
react to exactly what changed (Anki's ``OpChanges``).  The window's GUI thread awaits them on
its qasync loop and so never waits on a commit, an fsync, a file read or the keychain.

Hot reads (the workspace tree, the chat lists) come from the registry's memory and need no
operation; reads that touch the disk (a page of messages, a document's history) are
operations too, run on the same thread so they queue behind nothing but writes.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Executor, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from app.errors import Refused
from app.events import Event

if TYPE_CHECKING:
    from app.base.fuzzy import Match
    from app.cairn import Cairn
    from app.chat.turn import EngineListener, Subscription, Turn
    from app.history.importing import Preview, Progress, Report
    from app.knowledge.cairn_file import FileState
    from app.knowledge.imported import Backlog
    from app.knowledge.merge import Hunk, Merged
    from app.knowledge.status import ChatKnowledge, OwnerKnowledge
    from app.records import Chat, WebSettings, Workspace
    from app.sharing.chat_markdown import ChatExported
    from app.sharing.export import Exported
    from app.sharing.importing import Imported
    from app.store.documents import Conflict, Document, Saved, Version
    from app.store.files import KnowledgeFile
    from app.store.mcp import InWorkspace, ServerConfig
    from app.store.messages import Message
    from app.store.registry.removed import RemovedWorkspace
    from app.store.registry.removed_chats import RemovedChat
    from app.store.search import Hit
    from app.store.suggestions import Suggestion
    from app.tools import Approver
    from app.tools.mcp_client import ServerTool

log = logging.getLogger(__name__)

T = TypeVar("T")
E = TypeVar("E", bound=Event)


@dataclass(frozen=True, slots=True)
class Changes:
    """What one operation changed, as the events it emitted after its commits."""

    events: tuple[Event, ...] = ()

    def of(self, kind: type[E]) -> tuple[E, ...]:
        return tuple(e for e in self.events if isinstance(e, kind))

    def __bool__(self) -> bool:
        return bool(self.events)


@dataclass(frozen=True, slots=True)
class Found:
    """What the search box shows for *text*: titles first, then content."""

    text: str
    workspaces: list[Match[str]]
    chats: list[Match[str]]
    hits: list[Hit]
    refusal: str | None = None  # the sentence when the index cannot answer this text
    words: tuple[str, ...] = ()  # the words typed, as the query reads them (to highlight)


class Operations:
    """Async operations on one :class:`~app.cairn.Cairn`, for the window."""

    def __init__(self, cairn: Cairn, *, writer: Executor | None = None) -> None:
        self.cairn = cairn
        # Cairn's one writer thread when it has one; else our own, one thread, one writer.
        self._writer: Executor = writer or getattr(cairn, "writer", None) or \
            ThreadPoolExecutor(max_workers=1, thread_name_prefix="cairn-writer")
        self._quitting = threading.Event()  # background reads queued from now on are skipped
        self._warm: asyncio.Future[None] | None = None  # the warm-up, once per process

    # ----------------------------------------------------------------- the machinery

    async def run(self, work: Callable[[], T]) -> tuple[T, Changes]:
        """Run *work* on the writer thread; collect the events it emitted there."""
        hub = self.cairn.registry.hub

        def on_writer() -> tuple[T, Changes]:
            me = threading.get_ident()
            captured: list[Event] = []

            def collect(event: Event) -> None:
                if threading.get_ident() == me:  # another thread's change is not ours
                    captured.append(event)

            subscription = hub.subscribe(collect)
            try:
                result = work()
            finally:
                subscription.close()
            return result, Changes(tuple(captured))

        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._writer, on_writer)

    async def load_rest(self) -> None:
        """The chats the first paint did not need, in pages on the storage thread (other
        operations take turns with them); a refusal to start (the integrity check) is raised."""
        loop = asyncio.get_running_loop()

        def step() -> bool:
            return not self._quitting.is_set() and self.cairn.registry.load_step()

        while await loop.run_in_executor(self._writer, step):
            pass

    def quitting(self) -> None:
        """The window quits: background reads queued on the storage thread (the start-up
        load's pages, the folders' status) are skipped from now on.  Writes still run: what
        was asked for is stored first."""
        self._quitting.set()

    def close(self) -> None:
        """At quit, before the core closes: queued searches dropped, the one running (whose
        index check may write) finished."""
        searcher: ThreadPoolExecutor | None = getattr(self, "_searcher", None)
        if searcher is not None:
            searcher.shutdown(wait=True, cancel_futures=True)

    async def read(self, work: Callable[[], T]) -> T:
        """A read that touches the disk, off the caller's thread."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._writer, work)

    # ----------------------------------------------------------------- start-up

    async def warm_up(self) -> None:
        """What the first Send would otherwise wait for: importing the SDK (~0.7 s and ~90 MB
        here, seconds without cached bytecode) and asking the keychain (which can prompt or
        hang).  Once per process (a second call waits for the first); the window calls it
        when the person starts writing a message.

        On a thread of its own, a daemon one: it must never queue the writer's work behind
        an import, nor hold up quitting.
        """
        if self._warm is None:
            def warm() -> None:
                try:
                    from app.base.live import collector_held, settle_interpreter
                    from app.llm.requests import load_sdk

                    # The import makes ~150,000 objects that live as long as the process:
                    # the collector would walk them over and over, holding the interpreter
                    # lock (the loop waited up to 55 ms for one pass): held, then frozen.
                    with collector_held():
                        load_sdk()  # loaded once, here, off the GUI thread
                    settle_interpreter()
                    from markdown_it import MarkdownIt

                    MarkdownIt("commonmark").render("*warm*")  # the chat view's first render

                    self.cairn.settings.api_key()
                except Exception:  # the turn will say what is wrong with the keychain
                    log.info("warming up failed", exc_info=True)

            self._warm = asyncio.ensure_future(_on_a_thread_of_its_own(warm, "cairn-warm-up"))
        await asyncio.shield(self._warm)

    async def api_key(self) -> str | None:
        """The stored key (the keychain, asked once per process), read on a daemon thread of
        its own: the keychain can prompt or hang, so it never queues the storage thread's
        work nor holds up quitting."""
        return await _on_a_thread_of_its_own(self.cairn.settings.api_key, "cairn-keychain")

    async def check_folders(self) -> Changes:
        """Look at every workspace's folder (``ok`` / ``missing-dir``): a dead network share
        can take seconds to answer, so never on the GUI thread (and not once quitting)."""
        def check() -> None:
            if not self._quitting.is_set():
                self.cairn.registry.refresh_status()

        _, changes = await self.run(check)
        return changes

    # ----------------------------------------------------------------- workspaces

    async def add_workspace(self, path: str, *, at_end: bool = False
                            ) -> tuple[tuple[Workspace, bool], Changes]:
        return await self.run(lambda: self.cairn.registry.add_workspace(path, at_end=at_end))

    async def rename_workspace(self, ws_id: str, title: str) -> tuple[Workspace, Changes]:
        return await self.run(lambda: self.cairn.registry.rename_workspace(ws_id, title))

    async def update_workspace(self, ws_id: str, **fields: Any) -> tuple[Workspace, Changes]:
        return await self.run(lambda: self.cairn.registry.update_workspace(ws_id, **fields))

    async def advance_workspace(self, ws_id: str) -> tuple[Workspace, Changes]:
        return await self.run(lambda: self.cairn.registry.advance_workspace(ws_id))

    async def move_workspace(self, ws_id: str, *, index: int) -> tuple[None, Changes]:
        return await self.run(lambda: self.cairn.registry.move_workspace(ws_id, index=index))

    async def move_to_folder(self, ws_id: str, path: str) -> tuple[Workspace, Changes]:
        return await self.run(lambda: self.cairn.registry.move_to_folder(ws_id, path))

    async def remove_workspace(self, ws_id: str) -> tuple[bool, Changes]:
        return await self.run(lambda: self.cairn.registry.remove_workspace(ws_id))

    async def removed_workspaces(self) -> list[RemovedWorkspace]:
        """Recently removed (a storage read): most recently removed first."""
        return await self.read(self.cairn.registry.removed_workspaces)

    async def restore_workspace(self, ws_id: str, *, into: str | None = None
                                ) -> tuple[Workspace, Changes]:
        """Restore a removed workspace at its folder, or *into* another one."""
        return await self.run(lambda: self.cairn.registry.restore_workspace(ws_id, into=into))

    async def export_workspace(self, ws_id: str, target: Path, *, with_chats: bool = False,
                               with_history: bool = False, replace: bool = False
                               ) -> tuple[Exported, Changes]:
        """Write a ``.cairn`` bundle (reads, hashes and zips: seconds for a large one).
        *replace* once the person agreed to overwrite an existing file."""
        from app.sharing.export import export_workspace

        return await self.run(lambda: export_workspace(
            self.cairn.registry, ws_id, target, with_chats=with_chats,
            with_history=with_history, replace=replace))

    async def check_bundle(self, source: Path) -> str:
        """Check a ``.cairn`` bundle before anything is asked or written: the title of the
        workspace it holds (refused with the import's own sentence)."""
        from app.sharing.importing import check_bundle

        title, _ = await self.run(lambda: check_bundle(source))
        return title

    async def import_bundle(self, source: Path, folder: str) -> tuple[Imported, Changes]:
        """Open a ``.cairn`` bundle into *folder* as a new workspace; the registry reloads
        (one ``Reset``) once it committed."""
        from app.sharing.importing import import_bundle

        return await self.run(lambda: import_bundle(self.cairn.registry, source, folder))

    # ----------------------------------------------------------------- history

    async def preview_history(self, source: Path, *, folders: dict[str, str] | None = None,
                              into: str | None = None) -> Preview:
        """What a Claude.ai or ChatGPT export holds (every bound checked: it reads the whole
        export, so it runs on a thread of its own, never holding up the writer)."""
        from app.history.importing import preview

        registry = self.cairn.registry
        return await asyncio.to_thread(lambda: preview(registry, source, folders=folders,
                                                       into=into))

    async def import_history(self, source: Path, *, folders: dict[str, str] | None = None,
                             into: str | None = None,
                             progress: Callable[[Progress], object] | None = None,
                             stop: threading.Event | None = None) -> Report:
        """Import an export (``app.history.importing``) on a thread of its own: its batches
        take the writer in turn with every other change.  *progress* hears each chat read,
        on the caller's loop.  *stop* set: the batch read so far is stored and the report
        says the import stopped.  Cancelling the task stops it the same way (and waits for
        that batch, so what was imported stays whole)."""
        from app.history.importing import import_history

        cairn = self.cairn
        stop = stop or threading.Event()
        loop = asyncio.get_running_loop()

        def tick(p: Progress) -> None:
            if progress is not None:
                loop.call_soon_threadsafe(progress, p)

        work = loop.run_in_executor(None, lambda: import_history(
            cairn.registry, cairn.files, source, folders=folders, into=into, progress=tick,
            stop=stop))
        try:
            return await asyncio.shield(work)
        except asyncio.CancelledError:
            stop.set()
            await asyncio.wait([work])
            raise

    async def imported_backlog(self, ws_id: str) -> Backlog:
        """What learning the workspace's imported chats would take, and cost (reads)."""
        from app.knowledge.imported import backlog

        cairn = self.cairn
        model = str(cairn.settings.get("model.knowledge"))
        result, _ = await self.run(lambda: backlog(cairn.registry, cairn.chats, model, ws_id))
        return result

    async def learn_imported(self, plan: Backlog,
                             progress: Callable[[int, int], object] | None = None) -> int:
        """Learn from *plan*'s imported chats, one at a time, in the background; cancel the
        task to stop (what was learned stays).  How many chats were learned."""
        from app.knowledge.imported import learn

        return await learn(self.cairn.registry, self.cairn.rebuilder, plan, progress)

    # ----------------------------------------------------------------- chats

    async def new_chat(self, *, folder: str | None = None, title: str = "",
                       workspace_id: str | None = None,
                       reuse_untouched: bool = False) -> tuple[Chat, Changes]:
        """A chat in *folder* (Ungrouped when it is no workspace's); with *workspace_id*, in
        that workspace's folder, refused in one sentence when the folder is gone.  With
        *reuse_untouched*, that list's empty "New chat" when it has one (the window's New
        chat: see ``ChatLists.new_chat``)."""
        registry = self.cairn.registry

        def make() -> Chat:
            where = registry.chat_folder(workspace_id) if workspace_id is not None else folder
            return registry.new_chat(folder=where, title=title,
                                     reuse_untouched=reuse_untouched)

        return await self.run(make)

    async def rename_chat(self, chat_id: str, title: str) -> tuple[Chat, Changes]:
        return await self.run(lambda: self.cairn.registry.rename_chat(chat_id, title))

    async def archive_chat(self, chat_id: str) -> tuple[Chat, Changes]:
        return await self.run(lambda: self.cairn.registry.archive_chat(chat_id))

    async def stop_and_archive_chat(self, chat_id: str) -> tuple[Chat, Changes]:
        return await self.run(lambda: self.cairn.registry.stop_and_archive_chat(chat_id))

    async def unarchive_chat(self, chat_id: str) -> tuple[Chat, Changes]:
        return await self.run(lambda: self.cairn.registry.unarchive_chat(chat_id))

    async def remove_chat(self, chat_id: str, *, stop: bool = False) -> tuple[Chat, Changes]:
        """Delete a chat (kept 30 days among the recently removed; *stop*: a reply running
        in it is stopped)."""
        return await self.run(lambda: self.cairn.registry.remove_chat(chat_id, stop=stop))

    async def removed_chats(self) -> list[RemovedChat]:
        """The recently removed chats (a storage read), most recently removed first."""
        return await self.read(self.cairn.registry.removed_chats)

    async def restore_chat(self, chat_id: str) -> tuple[Chat, Changes]:
        return await self.run(lambda: self.cairn.registry.restore_chat(chat_id))

    async def pin_chat(self, chat_id: str) -> tuple[Chat, Changes]:
        return await self.run(lambda: self.cairn.registry.pin_chat(chat_id))

    async def unpin_chat(self, chat_id: str) -> tuple[Chat, Changes]:
        return await self.run(lambda: self.cairn.registry.unpin_chat(chat_id))

    async def move_chat(self, chat_id: str, *, index: int) -> tuple[Chat, Changes]:
        return await self.run(lambda: self.cairn.registry.move_chat(chat_id, index=index))

    async def move_chat_to(self, chat_id: str, ws_id: str | None, *, index: int = 0
                           ) -> tuple[Chat, Changes]:
        """Into another workspace (None: Ungrouped), at *index* of its chats."""
        return await self.run(
            lambda: self.cairn.registry.move_chat_to(chat_id, ws_id, index=index))

    async def messages(self, chat_id: str, *, before: int | None = None, limit: int = 50
                       ) -> list[Message]:
        """A page of a chat, oldest first: the newest page when *before* is None."""
        return await self.read(
            lambda: self.cairn.chats.messages(chat_id, before=before, limit=limit))

    async def page(self, chat_id: str, *, before: int | None = None, limit: int = 50
                   ) -> list[Message]:
        """A page of a chat that starts where a turn starts (``ChatStore.page``)."""
        return await self.read(
            lambda: self.cairn.chats.page(chat_id, before=before, limit=limit))

    async def messages_after(self, chat_id: str, after: int) -> list[Message]:
        """The conversation after message *after* (the end of a chat as it grows)."""
        return await self.read(lambda: self.cairn.chats.messages(chat_id, after=after))

    def subscribe_turns(self, callback: EngineListener) -> Subscription:
        """Hear every turn's events on the event loop, as ``callback(turn, event)``."""
        return self.cairn.engine.subscribe(callback)

    def running(self, chat_id: str) -> Turn | None:
        return self.cairn.engine.running(chat_id)

    def running_turns(self) -> list[Turn]:
        """Every turn streaming now, in any chat (quit stops them)."""
        return self.cairn.engine.running_turns()

    async def attachment_image(self, sha256: str) -> bytes | None:
        """A sent image's bytes (for its thumbnail), or None (``FileStore.image_of``)."""
        return await self.read(lambda: self.cairn.files.image_of(sha256))

    async def chat_knowledge(self, chat_id: str) -> ChatKnowledge:
        """What the chat header says about the chat's knowledge (``app.knowledge.status``)."""
        from app.knowledge.status import chat_knowledge

        def read() -> ChatKnowledge:
            chat = self.cairn.registry.get_chat(chat_id, verb="show")
            return chat_knowledge(self.cairn.registry, self.cairn.rebuilder, chat)

        return await self.read(read)

    # ----------------------------------------------------------------- turns

    async def start_turn(self, chat_id: str, text: str, *, attachments: Sequence[Path] = (),
                         web: bool | None = None, approver: Approver | None = None) -> Turn:
        """Send: the message is stored, then the reply streams (``ChatEngine.start_turn``).
        *web*: True lets Claude search and fetch the web for this message, False keeps it
        off for this message, None follows the workspace's setting.  *approver* (the chat's
        question) is asked before an MCP tool call its policy does not allow."""
        return await self.cairn.engine.start_turn(chat_id, text, attachments=attachments,
                                                  web=web, approver=approver)

    async def web_settings(self, workspace_id: str) -> WebSettings:
        """Web search and fetch in the workspace (its own, else its parent's, else off)."""
        from app.chat.web import web_settings

        return await self.read(lambda: web_settings(self.cairn.registry, self.cairn.web,
                                                    workspace_id))

    async def set_web_settings(self, workspace_id: str, settings: WebSettings
                               ) -> tuple[WebSettings, Changes]:
        """The workspace's web switch, searches per reply and sites; refused in one sentence
        (``app.chat.web.set_web_settings``)."""
        from app.chat.web import set_web_settings

        return await self.run(lambda: set_web_settings(self.cairn.registry, self.cairn.web,
                                                       workspace_id, settings))

    async def retry(self, chat_id: str, message_id: int | None = None, *,
                    web: bool | None = None, approver: Approver | None = None) -> Turn:
        """A new version of a reply, streamed beside the old one (``ChatEngine.retry``):
        *message_id* a message of that reply (None: the shown path's last one).  *web* as for
        ``start_turn``: this reply's web search, on, off or the workspace's; *approver* as
        for ``start_turn``."""
        return await self.cairn.engine.retry(chat_id, message_id, web=web, approver=approver)

    async def edit(self, chat_id: str, message_id: int, text: str, *,
                   web: bool | None = None, approver: Approver | None = None) -> Turn:
        """A new version of the person's message *message_id*, its reply streamed under it
        (``ChatEngine.edit_and_resend``); the earlier version stays, one switch away."""
        return await self.cairn.engine.edit_and_resend(chat_id, message_id, text, web=web,
                                                       approver=approver)

    edit_and_resend = edit

    # ----------------------------------------------------------------- branches

    async def versions(self, chat_id: str, message_id: int) -> list[Message]:
        """Message *message_id* and its siblings, oldest first, each with ``version`` and
        ``versions`` (``ChatStore.versions``)."""
        return await self.read(lambda: self.cairn.chats.versions(chat_id, message_id))

    async def switch(self, chat_id: str, message_id: int) -> tuple[int, Changes]:
        """Show version *message_id*'s branch: the newest message below it becomes the
        chat's current leaf, kept; returns it, and ``BranchShown`` among the changes
        (``ChatEngine.switch``)."""
        return await self.run(lambda: self.cairn.engine.switch(chat_id, message_id))

    async def reveal(self, chat_id: str, message_id: int) -> tuple[int, Changes]:
        """Open the chat on the branch of message *message_id* (a search hit): nothing changes
        when the shown path holds it, else its branch is shown as by :meth:`switch`.  Returns
        the chat's leaf (``ChatStore.reveal``)."""
        return await self.run(lambda: self.cairn.chats.reveal(chat_id, message_id))

    async def fork(self, chat_id: str, message_id: int) -> tuple[Chat, Changes]:
        """Fork from here: a new chat in the same workspace with the path down to
        *message_id*, titled "<title> (fork)" (``ChatEngine.fork``); ``ChatAdded``."""
        return await self.run(lambda: self.cairn.engine.fork(chat_id, message_id))

    def stop(self, chat_id: str) -> bool:
        """Stop the reply streaming in the chat; False when none is."""
        turn = self.cairn.engine.running(chat_id)
        if turn is None:
            return False
        turn.cancel()
        return True

    async def check_attachment(self, path: Path) -> dict[str, Any]:
        """What Send would refuse about this file, said now (``FileStore.check_attachment``)."""
        return await self.read(lambda: self.cairn.files.check_attachment(path))

    async def keep_pasted_image(self, data: bytes, suffix: str = ".png") -> Path:
        """An image pasted into the composer, as a file to attach
        (``FileStore.keep_pasted_image``)."""
        return await self.read(lambda: self.cairn.files.keep_pasted_image(data, suffix))

    async def draft(self, chat_id: str) -> str:
        return await self.read(lambda: self.cairn.chats.draft(chat_id))

    async def save_draft(self, chat_id: str, text: str) -> tuple[None, Changes]:
        return await self.run(lambda: self.cairn.chats.save_draft(chat_id, text))

    # ----------------------------------------------------------------- knowledge

    async def document(self, owner: str) -> Document:
        return await self.read(lambda: self.cairn.knowledge.get(owner))

    async def save_knowledge(self, owner: str, text: str, *, based_on: int | None
                             ) -> tuple[Saved | Conflict, Changes]:
        """The editor's save: ``Conflict`` when a rebuild wrote a newer version meanwhile."""
        return await self.run(lambda: self.cairn.knowledge.save(owner, text, source="user",
                                                                based_on=based_on))

    async def keep_knowledge(self, owner: str, text: str, *, based_on: int, opened_at: int
                             ) -> tuple[Saved | Conflict, Changes]:
        """"Keep mine" (``KnowledgeStore.keep_mine``): the chats whose rebuild results it
        replaces are rebuilt now, on top of the person's text."""
        (result, relearn), changes = await self.run(lambda: self.cairn.knowledge.keep_mine(
            owner, text, based_on=based_on, opened_at=opened_at))
        self.cairn.scheduler.rebuild_now(relearn)
        return result, changes

    async def restore_knowledge(self, owner: str, version: int) -> tuple[Document, Changes]:
        return await self.run(lambda: self.cairn.knowledge.restore(owner, version))

    async def history(self, owner: str) -> list[Version]:
        return await self.read(lambda: self.cairn.knowledge.history(owner))

    async def diff(self, owner: str, old: int, new: int) -> str:
        return await self.read(lambda: self.cairn.knowledge.diff(owner, old, new))

    async def version_text(self, owner: str, version: int) -> str:
        """A saved version's text ('' for version 0, before the first save)."""
        if version == 0:
            return ""
        return await self.read(lambda: self.cairn.knowledge.version_text(owner, version))

    async def compare(self, owner: str, old: int, new: int) -> list[Hunk]:
        """Two saved versions as the hunks a diff view shows (version 0: empty)."""
        from app.knowledge.merge import compare

        store = self.cairn.knowledge

        def work() -> list[Hunk]:
            before = store.version_text(owner, old) if old else ""
            after = store.version_text(owner, new) if new else ""
            return compare(before, after)

        return await self.read(work)

    async def compare_texts(self, old: str, new: str) -> list[Hunk]:
        from app.knowledge.merge import compare

        return await self.read(lambda: compare(old, new))

    async def merge_knowledge(self, owner: str, base: int, mine: str) -> tuple[Merged, Document]:
        """The changes made since version *base* put into *mine* (``merge3``), with the
        current document they came from: the editor then saves on that version."""
        from app.knowledge.merge import merge3

        store = self.cairn.knowledge

        def work() -> tuple[Merged, Document]:
            current = store.get(owner)
            before = store.version_text(owner, base) if base else ""
            return merge3(before, mine, current.text), current

        return await self.read(work)

    async def knowledge_file(self, ws_id: str) -> FileState:
        """CAIRN.md for *ws_id*: on or off, and what the panel says about it (the read
        takes in an outside edit first)."""
        def work() -> FileState:
            self.cairn.cairn_file_sync.sync(ws_id)
            return self.cairn.cairn_file_sync.state(ws_id)

        return await self.read(work)

    async def switch_knowledge_file(self, ws_id: str, on: bool, *, keep: str | None = None
                                    ) -> tuple[FileState, Changes]:
        """The knowledge panel's switch (``CairnFileSync.switch``)."""
        return await self.run(lambda: self.cairn.cairn_file_sync.switch(ws_id, on, keep=keep))

    async def knowledge_file_conflict(self, ws_id: str) -> bool:
        """Would turning CAIRN.md on meet a file of the folder that is not the document?"""
        return await self.read(lambda: self.cairn.cairn_file_sync.conflict(ws_id))

    async def adopt_knowledge_files(self, ws_ids: tuple[str, ...], *, keep: str | None = None
                                    ) -> tuple[list[str], Changes]:
        """After an import: CAIRN.md on where the bundle had it on; the ids whose folder has
        its own CAIRN.md are returned, to ask which to keep."""
        return await self.run(lambda: self.cairn.cairn_file_sync.adopt(ws_ids, keep=keep))

    async def restore_removed_entries(self, ws_id: str) -> tuple[Document, Changes]:
        """The panel's Restore: the entries an outside save of CAIRN.md removed of Cairn's
        put back (``CairnFileSync.restore_removed``)."""
        return await self.run(lambda: self.cairn.cairn_file_sync.restore_removed(ws_id))

    async def dismiss_removed_entries(self, ws_id: str) -> None:
        """The panel's Dismiss beside Restore: the outside save stands as it is."""
        await self.run(lambda: self.cairn.cairn_file_sync.dismiss_removed(ws_id))

    async def compare_conflict_copy(self, ws_id: str, name: str) -> list[Hunk]:
        """Compare: the document against a sync conflict copy, line by line, computed off the
        GUI thread."""
        from app.knowledge.merge import compare

        def work() -> list[Hunk]:
            copy = self.cairn.cairn_file_sync.copy_text(ws_id, name)
            return compare(self.cairn.knowledge.get(ws_id).text, copy)

        return await self.read(work)

    async def merge_conflict_copy(self, ws_id: str, name: str) -> tuple[Document, Changes]:
        """Merge: what the copy has that the document has not, put in (nothing dropped)."""
        return await self.run(lambda: self.cairn.cairn_file_sync.merge_copy(ws_id, name))

    async def dismiss_conflict_copy(self, ws_id: str, name: str) -> None:
        """Dismiss: not offered again until it changes; the file stays in the folder."""
        await self.run(lambda: self.cairn.cairn_file_sync.dismiss_copy(ws_id, name))

    async def watch_knowledge_files(self) -> list[str]:
        """The window's watcher, about once a second: outside edits of every CAIRN.md taken in
        (a file is read only when its size, time or identity moved)."""
        return (await self.run(self.cairn.cairn_file_sync.sync_all))[0]

    async def reveal_folder(self, ws_id: str) -> None:
        """Show the workspace's folder in the file manager (``app.base.desktop``)."""
        from app.base import desktop

        folder = self.cairn.registry.get_workspace(ws_id, verb="show").path
        await self.read(lambda: desktop.reveal(folder))

    async def open_terminal(self, ws_id: str) -> None:
        """Open a terminal in the workspace's folder (``app.base.desktop``)."""
        from app.base import desktop

        folder = self.cairn.registry.get_workspace(ws_id, verb="open a terminal in").path
        await self.read(lambda: desktop.open_terminal(folder))

    async def folder_access(self, ws_id: str) -> tuple[bool, tuple[str, ...]]:
        """May Claude read the folder of *ws_id*'s project (and what was allowed)?"""
        from app.tools.folder_reading import access

        return await self.read(lambda: access(self.cairn.registry, self.cairn.folders, ws_id))

    async def switch_folder_access(self, ws_id: str, on: bool, *,
                                   allow: list[str] | None = None) -> tuple[None, Changes]:
        """The window's folder-access switch and its allow list
        (``app.tools.folder_reading.switch_access``)."""
        from app.tools.folder_reading import switch_access

        return await self.run(lambda: switch_access(self.cairn.registry, self.cairn.folders,
                                                    ws_id, on, allow=allow))

    async def knowledge_status(self, owner: str) -> OwnerKnowledge:
        """What the knowledge panel says about *owner*'s document (``app.knowledge.status``)."""
        from app.knowledge.status import owner_knowledge

        return await self.read(
            lambda: owner_knowledge(self.cairn.registry, self.cairn.rebuilder, owner))

    async def suggestions(self, owner: str) -> list[Suggestion]:
        """What waits for the person to decide about *owner*'s document
        (``app.knowledge.suggestions``)."""
        return await self.read(lambda: self.cairn.knowledge.suggestions([owner]))

    async def accept_suggestion(self, suggestion_id: int, *, edited: str | None = None
                                ) -> tuple[Document, Changes]:
        """Apply a suggestion as the person's save (in their words when *edited*)."""
        from app.knowledge import suggestions

        return await self.run(lambda: suggestions.accept(self.cairn.knowledge, suggestion_id,
                                                         edited=edited))

    async def dismiss_suggestion(self, suggestion_id: int) -> tuple[Suggestion, Changes]:
        from app.knowledge import suggestions

        return await self.run(lambda: suggestions.dismiss(self.cairn.knowledge, suggestion_id))

    async def undo_dismiss_suggestion(self, suggestion: Suggestion
                                      ) -> tuple[Suggestion, Changes]:
        from app.knowledge import suggestions

        return await self.run(lambda: suggestions.undo_dismiss(self.cairn.knowledge,
                                                               suggestion))

    async def retry_knowledge(self, owner: str) -> int:
        """"Retry now" (``KnowledgeScheduler.retry``): how many chats' rebuilds started."""
        return await self.cairn.scheduler.retry(owner)

    async def save_instructions(self, ws_id: str, *, description: str, instructions: str,
                                expected: tuple[str, str]) -> tuple[Workspace | None, Changes]:
        """Save a workspace's description and instructions if they are still *expected*
        (what the editor opened); None, with nothing written, when they changed meanwhile
        (``Registry.save_description_and_instructions``)."""
        return await self.run(lambda: self.cairn.registry.save_description_and_instructions(
            ws_id, description=description, instructions=instructions, expected=expected))

    # ----------------------------------------------------------------- files

    async def add_file(self, ws_id: str, source: Path, *, description: str = ""
                       ) -> tuple[KnowledgeFile, Changes]:
        """Read, hash and store a file: seconds for a large one, never on the GUI thread."""
        return await self.run(
            lambda: self.cairn.files.add(ws_id, source, description=description))

    async def files_of(self, ws_ids: Sequence[str]) -> list[KnowledgeFile]:
        return await self.read(lambda: self.cairn.files.of_workspaces(list(ws_ids)))

    async def manifest(self, ws_id: str) -> list[tuple[KnowledgeFile, str]]:
        """A workspace's own knowledge files, each with its line as the model sees it in the
        manifest (``FileStore.manifest``, ``app.chat.context.manifest_line``)."""
        from app.chat.context import manifest_line

        chain = [ws.id for ws in self.cairn.registry.lineage(ws_id)]
        files = await self.read(lambda: self.cairn.files.manifest(chain, own=True))
        return [(f, manifest_line(f, scope)) for f, scope in files]

    async def describe_file(self, file_id: str, description: str
                            ) -> tuple[KnowledgeFile, Changes]:
        return await self.run(lambda: self.cairn.files.describe(file_id, description))

    async def remove_file(self, file_id: str) -> tuple[KnowledgeFile, Changes]:
        """The record, and the blob when nothing else uses it (a file removal on disk)."""
        return await self.run(lambda: self.cairn.files.remove(file_id))

    # ----------------------------------------------------------------- MCP servers

    async def mcp_servers(self) -> list[tuple[ServerConfig, list[str]]]:
        """Every MCP server, and the workspaces it is on in (none is started)."""
        store = self.cairn.mcp
        return await self.read(lambda: [(c, store.workspaces_of(c.name))
                                        for c in store.servers()])

    async def add_mcp_server(self, config: ServerConfig) -> tuple[ServerConfig, Changes]:
        """``cairn mcp add``'s use case: its env and headers to the keychain (which can be
        slow or ask the person), the rest stored; off in every workspace."""
        return await self.run(lambda: self.cairn.mcp.add(config))

    async def remove_mcp_server(self, name: str) -> tuple[None, Changes]:
        """``cairn mcp remove``'s: the server and its secrets go."""
        return await self.run(lambda: self.cairn.mcp.remove(name))

    async def import_claude_desktop(self, path: Path | None = None
                                    ) -> tuple[tuple[Path, list[str], list[str]], Changes]:
        """``cairn mcp import-claude-desktop``'s: Claude Desktop's file (its own place, or
        *path*) read and each server whose name is free added, off everywhere; (the file,
        added, kept as they were)."""
        from app.store.mcp import claude_desktop_file, read_claude_desktop

        def work() -> tuple[Path, list[str], list[str]]:
            where = path or claude_desktop_file()
            added, kept = self.cairn.mcp.import_servers(read_claude_desktop(where))
            return where, added, kept

        return await self.run(work)

    async def mcp_in_workspace(self, ws_id: str) -> list[InWorkspace]:
        """The servers as *ws_id*'s Tools page shows them (``McpStore.in_workspace``)."""
        chain = [ws.id for ws in self.cairn.registry.lineage(ws_id)] or [ws_id]
        return await self.read(lambda: self.cairn.mcp.in_workspace(chain))

    async def switch_mcp_server(self, name: str, ws_id: str, on: bool) -> tuple[None, Changes]:
        """``cairn mcp on|off``'s: chats in *ws_id* may use the server (from their next
        message), or no longer."""
        store = self.cairn.mcp
        self.cairn.registry.get_workspace(ws_id, verb=f"turn {'on' if on else 'off'} an MCP "
                                          "server in")
        return await self.run(lambda: (store.turn_on if on else store.turn_off)(name, ws_id))

    async def set_mcp_policy(self, name: str, tool: str, ws_id: str, policy: str
                             ) -> tuple[None, Changes]:
        """``cairn mcp allow|ask|deny``'s: a tool's policy in *ws_id* (allow is also what
        Always allow stored; ask takes it back)."""
        return await self.run(lambda: self.cairn.mcp.set_policy(name, tool, ws_id, policy))

    def running_mcp_tools(self, name: str) -> list[ServerTool] | None:
        """The server's tools when it runs now, else None (from memory; starts nothing)."""
        return self.cairn.running_mcp_tools(name)

    async def start_mcp_tools(self, name: str) -> list[ServerTool]:
        """Start the server (when it does not run) and list its tools, as ``cairn mcp
        tools`` does; refused in its one sentence when it cannot start."""
        from app.tools.mcp_client import ServerProblem

        store = self.cairn.mcp
        config = await self.read(lambda: store.get(name, verb="list the tools of the MCP "
                                                   "server"))
        # The keychain may be slow or ask the person: a thread of its own, not the writer.
        config = await _on_a_thread_of_its_own(lambda: store.with_secrets(config),
                                               "cairn-keychain")
        try:
            return await self.cairn.mcp_servers.tools(config)
        except ServerProblem as problem:
            raise Refused(str(problem)) from None

    # ----------------------------------------------------------------- settings and key

    async def set_setting(self, key: str, value: Any) -> tuple[None, Changes]:
        return await self.run(lambda: self.cairn.settings.set(key, value))

    async def set_api_key(self, key: str) -> tuple[None, Changes]:
        """Into the system keychain, which can be slow or ask the person: never inline."""
        return await self.run(lambda: self.cairn.settings.set_api_key(key))

    async def forget_api_key(self) -> tuple[None, Changes]:
        return await self.run(self.cairn.settings.forget_api_key)

    async def has_api_key(self) -> bool:
        return await self.read(lambda: bool(self.cairn.settings.api_key()))

    # ----------------------------------------------------------------- the models list

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

    # ----------------------------------------------------------------- leaving a chat

    def chat_left(self, chat_id: str) -> None:
        """The person left *chat_id* (opened another chat or a workspace, or quit): a rebuild
        its exchanges armed starts now instead of after the idle delay.  On the loop's thread,
        where the rebuilds' timers are."""
        self.cairn.scheduler.chat_left(chat_id)

    # ----------------------------------------------------------------- find anything

    def _search_thread(self) -> Executor:
        """Searches run on a thread of their own: as-you-type queries never queue behind a
        write, and read through WAL without waiting for one."""
        executor: Executor | None = getattr(self, "_searcher", None)
        if executor is None:
            executor = self._searcher = ThreadPoolExecutor(
                max_workers=1, thread_name_prefix="cairn-search")
        return executor

    async def search(self, text: str, *, limit: int = 30) -> list[Hit]:
        """The best results for *text* (a refusal for what cannot be searched, the index's
        problem included)."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(
            self._search_thread(), lambda: self.cairn.search.find(text, limit=limit))

    async def find_anything(self, text: str, *, limit: int = 30) -> Found:
        """The search box: workspace and chat titles matched fuzzily (from the registry's
        memory), then the index's results; a query the index refuses keeps the titles."""
        registry = self.cairn.registry

        def work() -> Found:
            from app.base import fuzzy

            workspaces = fuzzy.best(text, ((w.id, w.title) for w in registry.workspaces()),
                                    limit=5)
            listing = registry.chat_listing()
            live = {c.id: c.title for c in listing.pinned}  # (a pinned chat is listed twice)
            live.update((c.id, c.title) for _, cs in listing.workspaces for c in cs)
            live.update((c.id, c.title) for c in listing.ungrouped)
            chats = fuzzy.best(text, live.items(), limit=8)
            try:
                hits = self.cairn.search.find(text, limit=limit)
                refusal = None
            except Refused as refused:
                hits, refusal = [], str(refused)
            return Found(text, workspaces, chats, hits, refusal, self.words(text))

        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._search_thread(), work)

    def words(self, text: str) -> tuple[str, ...]:
        """The words of *text* as a query reads them (what a view highlights); no I/O."""
        return self.cairn.search.words(text)

    async def find_in_chat(self, chat_id: str, text: str) -> list[int]:
        """The ids of the chat's messages that match *text*, oldest first (the whole chat)."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(
            self._search_thread(), lambda: self.cairn.search.in_chat(chat_id, text))

    async def export_chat(self, chat_id: str, target: Path, *, replace: bool = False
                          ) -> ChatExported:
        """One chat as a Markdown file (``app.sharing.chat_markdown``, as ``cairn chat
        export``)."""
        from app.sharing.chat_markdown import export_chat

        return await self.read(lambda: export_chat(
            self.cairn.registry, self.cairn.chats, chat_id, target, replace=replace))

    async def find_matches_in_chat(self, chat_id: str, text: str) -> list[tuple[int, int]]:
        """The chat's messages that match *text*, oldest first, each with its number of
        matches (``Search.in_chat_counted``)."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(
            self._search_thread(), lambda: self.cairn.search.in_chat_counted(chat_id, text))

    async def reaching(self, chat_id: str, message_id: int, *, before: int, limit: int = 50
                       ) -> tuple[list[Message], bool]:
        """The messages a chat view reads to show *message_id* (see ``ChatStore.reaching``)."""
        return await self.read(lambda: self.cairn.chats.reaching(
            chat_id, message_id, before=before, limit=limit))

    async def messages_before(self, chat_id: str, before: int) -> list[Message]:
        """The whole conversation before message *before*, oldest first (Ctrl+Home)."""
        return await self.read(lambda: self.cairn.chats.messages(chat_id, before=before))

    async def search_problem(self) -> str | None:
        """The search index's start-up check: a sentence when it is missing or damaged."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._search_thread(), self.cairn.search.check)

    async def reindex(self) -> dict[str, int]:
        """Rebuild the search index from scratch, on the writer thread."""
        counts, _ = await self.run(self.cairn.search.reindex)
        return counts


async def _on_a_thread_of_its_own(work: Callable[[], T], name: str) -> T:
    """``work()`` on a new daemon thread, awaited: for what can take seconds or hang (an
    import, the keychain) and must neither queue the storage thread's work nor hold up
    quitting (a pool's worker is joined at exit; a daemon thread is not)."""
    loop = asyncio.get_running_loop()
    done: asyncio.Future[T] = loop.create_future()

    def settle(result: T | None, error: BaseException | None) -> None:
        if done.done():
            return
        if error is not None:
            done.set_exception(error)
        else:
            done.set_result(result)  # type: ignore[arg-type]

    def body() -> None:
        result: T | None = None
        error: BaseException | None = None
        try:
            result = work()
        except BaseException as raised:  # handed to the awaiting task
            error = raised
        try:
            loop.call_soon_threadsafe(settle, result, error)
        except RuntimeError:  # the loop closed meanwhile (quitting): nobody waits
            pass

    threading.Thread(target=body, name=name, daemon=True).start()
    return await done
