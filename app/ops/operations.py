"""The operations the window calls: named, async, and never on the caller's thread.

Each operation runs its storage, file, keyring and heavy-import work on one writer thread and
returns ``(result, Changes)``: the result, or the refusal as
:class:`~app.errors.CairnError`, and the typed events the change emitted, so a caller can
react to exactly what changed (Anki's ``OpChanges``).  The window's GUI thread awaits them on
its qasync loop and so never waits on a commit, an fsync, a file read or the keychain.

Hot reads (the workspace tree, the chat lists) come from the registry's memory and need no
operation; reads that touch the disk (a page of messages, a document's history) are
operations too, run on the same thread so they queue behind nothing but writes.

The operations live by domain, one module each (as Anki's ``aqt/operations/{deck,note,tag}.py``):
:mod:`app.ops.workspaces`, :mod:`~app.ops.chats`, :mod:`~app.ops.knowledge`,
:mod:`~app.ops.folders` (CAIRN.md, folder access), :mod:`~app.ops.files`,
:mod:`~app.ops.sharing`, :mod:`~app.ops.history` (Claude.ai and ChatGPT imports),
:mod:`~app.ops.mcp`, :mod:`~app.ops.settings` (settings, key, models), :mod:`~app.ops.search`.
:class:`Operations` is their composition, the one the window builds: it owns the storage
thread and start-up, holds each part (``ops.chats``, ``ops.knowledge``…), and offers each part's
operations under their own names (``ops.rename_chat``).  A widget is typed against a protocol
of what it calls (``ui.knowledge.ops.KnowledgeOps``…), not against this whole class.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable
from concurrent.futures import Executor, ThreadPoolExecutor
from typing import TYPE_CHECKING, TypeVar

from app.events import Event
from app.ops.chats import ChatOperations
from app.ops.files import FileOperations
from app.ops.folders import FolderOperations
from app.ops.history import HistoryOperations
from app.ops.knowledge import KnowledgeOperations
from app.ops.mcp import McpOperations
from app.ops.part import Changes, on_a_thread_of_its_own
from app.ops.search import SearchOperations
from app.ops.settings import SettingsOperations
from app.ops.sharing import SharingOperations
from app.ops.workspaces import WorkspaceOperations

if TYPE_CHECKING:
    from app.cairn import Cairn

log = logging.getLogger(__name__)

T = TypeVar("T")


class Operations:
    """Async operations on one :class:`~app.cairn.Cairn`, for the window: the composition of
    the domain parts over one storage thread."""

    def __init__(self, cairn: Cairn, *, writer: Executor | None = None) -> None:
        self.cairn = cairn
        # Cairn's one writer thread when it has one; else our own, one thread, one writer.
        self._writer: Executor = writer or getattr(cairn, "writer", None) or \
            ThreadPoolExecutor(max_workers=1, thread_name_prefix="cairn-writer")
        self._quitting = threading.Event()  # background reads queued from now on are skipped
        self._warm: asyncio.Future[None] | None = None  # the warm-up, once per process
        # The parts, each given this object to run on; then each part's operations under
        # their own names, as every caller knows them (``ops.rename_chat``).
        workspaces = self.workspaces = WorkspaceOperations(self)
        self.add_workspace = workspaces.add_workspace
        self.rename_workspace = workspaces.rename_workspace
        self.update_workspace = workspaces.update_workspace
        self.advance_workspace = workspaces.advance_workspace
        self.move_workspace = workspaces.move_workspace
        self.move_to_folder = workspaces.move_to_folder
        self.remove_workspace = workspaces.remove_workspace
        self.removed_workspaces = workspaces.removed_workspaces
        self.restore_workspace = workspaces.restore_workspace
        self.web_settings = workspaces.web_settings
        self.set_web_settings = workspaces.set_web_settings
        self.save_instructions = workspaces.save_instructions
        sharing = self.sharing = SharingOperations(self)
        self.export_workspace = sharing.export_workspace
        self.check_bundle = sharing.check_bundle
        self.import_bundle = sharing.import_bundle
        self.export_chat = sharing.export_chat
        history_import = self.history_import = HistoryOperations(self)
        self.preview_history = history_import.preview_history
        self.import_history = history_import.import_history
        self.imported_backlog = history_import.imported_backlog
        self.learn_imported = history_import.learn_imported
        chats = self.chats = ChatOperations(self)
        self.new_chat = chats.new_chat
        self.rename_chat = chats.rename_chat
        self.archive_chat = chats.archive_chat
        self.stop_and_archive_chat = chats.stop_and_archive_chat
        self.unarchive_chat = chats.unarchive_chat
        self.remove_chat = chats.remove_chat
        self.removed_chats = chats.removed_chats
        self.restore_chat = chats.restore_chat
        self.pin_chat = chats.pin_chat
        self.unpin_chat = chats.unpin_chat
        self.move_chat = chats.move_chat
        self.move_chat_to = chats.move_chat_to
        self.messages = chats.messages
        self.page = chats.page
        self.messages_after = chats.messages_after
        self.subscribe_turns = chats.subscribe_turns
        self.running = chats.running
        self.running_turns = chats.running_turns
        self.attachment_image = chats.attachment_image
        self.chat_knowledge = chats.chat_knowledge
        self.start_turn = chats.start_turn
        self.retry = chats.retry
        self.edit = chats.edit
        self.versions = chats.versions
        self.switch = chats.switch
        self.reveal = chats.reveal
        self.fork = chats.fork
        self.stop = chats.stop
        self.check_attachment = chats.check_attachment
        self.keep_pasted_image = chats.keep_pasted_image
        self.draft = chats.draft
        self.save_draft = chats.save_draft
        self.reaching = chats.reaching
        self.messages_before = chats.messages_before
        knowledge = self.knowledge = KnowledgeOperations(self)
        self.document = knowledge.document
        self.save_knowledge = knowledge.save_knowledge
        self.keep_knowledge = knowledge.keep_knowledge
        self.restore_knowledge = knowledge.restore_knowledge
        self.history = knowledge.history
        self.diff = knowledge.diff
        self.version_text = knowledge.version_text
        self.compare = knowledge.compare
        self.compare_texts = knowledge.compare_texts
        self.merge_knowledge = knowledge.merge_knowledge
        self.knowledge_status = knowledge.knowledge_status
        self.suggestions = knowledge.suggestions
        self.accept_suggestion = knowledge.accept_suggestion
        self.dismiss_suggestion = knowledge.dismiss_suggestion
        self.undo_dismiss_suggestion = knowledge.undo_dismiss_suggestion
        self.retry_knowledge = knowledge.retry_knowledge
        folders = self.folders = FolderOperations(self)
        self.knowledge_file = folders.knowledge_file
        self.switch_knowledge_file = folders.switch_knowledge_file
        self.knowledge_file_conflict = folders.knowledge_file_conflict
        self.adopt_knowledge_files = folders.adopt_knowledge_files
        self.restore_removed_entries = folders.restore_removed_entries
        self.dismiss_removed_entries = folders.dismiss_removed_entries
        self.compare_conflict_copy = folders.compare_conflict_copy
        self.merge_conflict_copy = folders.merge_conflict_copy
        self.dismiss_conflict_copy = folders.dismiss_conflict_copy
        self.watch_knowledge_files = folders.watch_knowledge_files
        self.reveal_folder = folders.reveal_folder
        self.open_terminal = folders.open_terminal
        self.folder_access = folders.folder_access
        self.switch_folder_access = folders.switch_folder_access
        files = self.files = FileOperations(self)
        self.add_file = files.add_file
        self.files_of = files.files_of
        self.manifest = files.manifest
        self.describe_file = files.describe_file
        self.remove_file = files.remove_file
        mcp = self.mcp = McpOperations(self)
        self.mcp_servers = mcp.mcp_servers
        self.add_mcp_server = mcp.add_mcp_server
        self.remove_mcp_server = mcp.remove_mcp_server
        self.import_claude_desktop = mcp.import_claude_desktop
        self.mcp_in_workspace = mcp.mcp_in_workspace
        self.switch_mcp_server = mcp.switch_mcp_server
        self.set_mcp_policy = mcp.set_mcp_policy
        self.running_mcp_tools = mcp.running_mcp_tools
        self.start_mcp_tools = mcp.start_mcp_tools
        settings = self.settings = SettingsOperations(self)
        self.set_setting = settings.set_setting
        self.set_api_key = settings.set_api_key
        self.forget_api_key = settings.forget_api_key
        self.has_api_key = settings.has_api_key
        self.refresh_models = settings.refresh_models
        self.test_connection = settings.test_connection
        self.models_server = settings.models_server
        finding = self.finding = SearchOperations(self)
        self.search = finding.search
        self.find_anything = finding.find_anything
        self.words = finding.words
        self.find_in_chat = finding.find_in_chat
        self.find_matches_in_chat = finding.find_matches_in_chat
        self.search_problem = finding.search_problem
        self.reindex = finding.reindex

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

    async def read(self, work: Callable[[], T]) -> T:
        """A read that touches the disk, off the caller's thread."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._writer, work)

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

            self._warm = asyncio.ensure_future(on_a_thread_of_its_own(warm, "cairn-warm-up"))
        await asyncio.shield(self._warm)

    async def api_key(self) -> str | None:
        """The stored key (the keychain, asked once per process), read on a daemon thread of
        its own: the keychain can prompt or hang, so it never queues the storage thread's
        work nor holds up quitting."""
        return await on_a_thread_of_its_own(self.cairn.settings.api_key, "cairn-keychain")

    async def check_folders(self) -> Changes:
        """Look at every workspace's folder (``ok`` / ``missing-dir``): a dead network share
        can take seconds to answer, so never on the GUI thread (and not once quitting)."""
        def check() -> None:
            if not self._quitting.is_set():
                self.cairn.registry.refresh_status()

        _, changes = await self.run(check)
        return changes

    def chat_left(self, chat_id: str) -> None:
        """The person left *chat_id* (opened another chat or a workspace, or quit): a rebuild
        its exchanges armed starts now instead of after the idle delay.  On the loop's thread,
        where the rebuilds' timers are."""
        self.cairn.scheduler.chat_left(chat_id)

    def close(self) -> None:
        """At quit, before the core closes: queued searches dropped, the one running (whose
        index check may write) finished."""
        self.finding.close()
