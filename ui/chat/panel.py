"""The chat view: the header, the conversation and the composer for one chat at a time,
driven by the core's operations and the turns' events.

What is stored is read in pages that start where a turn starts (``Operations.page``): the
newest page when a chat opens, older ones as the person scrolls up.  A reply that streams
is a *live* entry fed by the turn's events and re-laid out at most every 40 ms; when the turn
ends, the live entry gives way to what the turn stored.  Turns keep running when another chat
is shown, and a chat shown again picks its live reply up where it is.

Nothing the person wrote is lost: the text leaves the composer only once the core has
stored the message, the draft is saved as it is typed (and at quit), and a refusal is said
under the composer with the text still in it.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import QDragEnterEvent, QDropEvent
from PySide6.QtWidgets import QApplication, QVBoxLayout, QWidget

from app.chat.turn import (
    KnowledgePulling,
    RetryWaiting,
    RoundStored,
    TextDelta,
    ThinkingDelta,
    ToolCall,
    ToolNotice,
    ToolResult,
    Turn,
    TurnEnded,
    TurnEvent,
)
from app.errors import CairnError
from app.events import BranchShown
from app.store.messages import FAILED, Message
from ui.chat import find
from ui.chat.approval import ApprovalBar
from ui.chat.composer import Composer
from ui.chat.delegate import STREAMING
from ui.chat.entries import CALL, PERSON, REPLY, Entry, build
from ui.chat.header import ChatHeader
from ui.chat.thumbnails import Thumbnails
from ui.chat.view import FORK, NEXT_VERSION, PREVIOUS_VERSION, ConversationView, source_of
from ui.chat.web import SOURCE
from ui.links import follow, open_found

if TYPE_CHECKING:
    from app.events import ChatChanged, SettingChanged
    from app.llm.catalog import Catalog
    from app.store.registry.registry import Registry
    from app.store.settings import Settings
    from ui.bridge import EventBridge
    from ui.chat.ops import ChatOps
    from ui.tasks import RunTask

log = logging.getLogger(__name__)

PAGE = 40  # messages read when a chat opens, and per scroll back
REFRESH_MS = 40  # a streaming reply is laid out again at most this often
MAX_ROWS = 600  # rows read back beyond which a new reply lets the oldest go
KEEP_ROWS = 300
DRAFT_MS = 500  # the draft is saved this long after the last keystroke
COPIED_FOR_MS = 1_500  # a code block's Copy says "Copied" this long


@dataclass(slots=True)
class Live:
    """A turn that is streaming, and its entry (shown when its chat is)."""

    turn: Turn
    entry: Entry
    pulling: str | None = None
    started: bool = False  # the first token arrived
    waiting: RetryWaiting | None = None  # the request waits before it is sent again
    waiting_until: float = 0.0  # (time.monotonic()) when it is sent again
    call_input: dict[str, Any] | None = None  # the tool call running now (its arguments)


class ChatPanel(QWidget):
    """Changes go through *ops*; *registry* (chats, workspaces), *settings* and *catalog*
    (model names) are only read, from memory."""

    sig_error = Signal(str)  # a refusal or a notice for the window's banner
    sig_folders = Signal(list)  # folders dropped on the chat: the window adds them
    sig_typing = Signal()  # the person started writing a message (once): time to warm up
    sig_open_chat = Signal(str)  # a chat to open (a fork just made): the window selects it
    sig_branch_shown = Signal()  # the conversation shows another branch (tests wait on it)

    def __init__(self, ops: ChatOps, bridge: EventBridge, run_task: RunTask, *,
                 registry: Registry, settings: Settings, catalog: Catalog,
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.ops, self.run_task = ops, run_task
        self.registry, self._settings, self._catalog = registry, settings, catalog
        self.setAcceptDrops(True)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(8)
        self.header = ChatHeader()
        self.view = ConversationView()
        self.thumbnails = Thumbnails(self.view, ops, run_task)  # sent images, shown small
        self.composer = Composer()
        layout.addWidget(self.header)
        layout.addWidget(self.view, 1)
        layout.addWidget(self.composer)
        self.find_bar = find.install(self, self)  # find in the chat, and Ctrl+Home
        layout.insertWidget(1, self.find_bar)
        # Before an MCP tool runs: the turn waits here for the person.
        self.approval = ApprovalBar()
        layout.insertWidget(layout.indexOf(self.composer), self.approval)
        self._reveal: tuple[str, int, tuple[str, ...]] | None = None  # a result to go to

        self.chat_id: str | None = None
        self._shown = 0  # bumped per chat shown: an older chat's reads are dropped
        self._last_id = 0  # the newest stored message the conversation shows
        self._oldest_id: int | None = None
        self._live: dict[str, Live] = {}
        self._dirty: set[str] = set()
        self._tail = asyncio.Lock()  # one read of the chat's end at a time
        self._sending: set[str] = set()  # chats whose Send is being stored
        self._draft_for: str | None = None  # the chat whose draft the composer holds
        self._draft_before_edit: str | None = None  # the draft an Edit put aside
        self._files: dict[str, list[tuple[Path, str, int]]] = {}  # chips of chats not shown
        self._typing_said = False

        self._refresh = QTimer(self)
        self._refresh.setSingleShot(True)
        self._refresh.setInterval(REFRESH_MS)
        self._refresh.timeout.connect(self._lay_out_live)
        self._countdown = QTimer(self)  # a wait before a retry, counted down in the header
        self._countdown.setInterval(1000)
        self._countdown.timeout.connect(self._count_down)
        self._draft_timer = QTimer(self)
        self._draft_timer.setSingleShot(True)
        self._draft_timer.setInterval(DRAFT_MS)
        self._draft_timer.timeout.connect(self.flush_draft)
        self._knowledge_timer = QTimer(self)
        self._knowledge_timer.setInterval(60_000)  # "learned 2 min ago" moves on
        self._knowledge_timer.timeout.connect(self.refresh_knowledge)
        self._knowledge_timer.start()

        self.view.sig_anchor.connect(self._anchor)
        self.view.sig_wants_older.connect(lambda: self.run_task(self._older()))
        self.composer.sig_send.connect(self._send_clicked)
        self.composer.sig_stop.connect(self.stop)
        self.composer.sig_files.connect(lambda paths: self.run_task(self._attach(paths)))
        self.composer.sig_image.connect(lambda data: self.run_task(self._paste(data)))
        self.composer.sig_edit_cancelled.connect(self._restore_draft)
        self.composer.edit.textChanged.connect(self._typed)
        self.composer.set_enter_sends(bool(settings.get("chat.enter_sends")))
        self.header.title.sig_rename.connect(
            lambda chat_id, title: self.run_task(self._rename(chat_id, title)))
        self.view.sig_escape.connect(self.stop)

        self._subscription = ops.subscribe_turns(self._turn_event)
        self.destroyed.connect(self._subscription.close)
        bridge.sig_chat_changed.connect(self._chat_changed)
        bridge.sig_workspace_changed.connect(lambda _e: self._show_header())
        bridge.sig_chats_regrouped.connect(lambda _e: self._show_header())
        bridge.sig_reset.connect(lambda _s: self._show_header())
        bridge.sig_setting_changed.connect(self._setting_changed)
        for signal in (bridge.sig_rebuild_applied, bridge.sig_rebuild_failed,
                       bridge.sig_rebuild_queued, bridge.sig_rebuild_started):
            signal.connect(lambda _e: self.refresh_knowledge())

    # ----------------------------------------------------------------- showing a chat

    def show_chat(self, chat_id: str) -> None:
        if chat_id == self.chat_id:
            return
        self.header.title.commit_pending()  # a rename typed for the chat being left
        self.flush_draft()
        if self.chat_id is not None:
            if self.composer.editing is None:
                self._files[self.chat_id] = self.composer.attachments()  # its chips wait for it
            self.ops.chat_left(self.chat_id)  # what it taught is learned now, not when idle
        self.chat_id = chat_id
        self.approval.show_for(chat_id)
        self._shown += 1
        self._last_id, self._oldest_id = 0, None
        self.view.has_older = False
        self.view.older_pending = False
        self.view.empty_text = ""  # (said once the chat has opened and has no message)
        self.view.show_entries([])
        self.composer.cancel_edit()
        self._draft_for = None
        self._draft_before_edit = None
        self.composer.edit.blockSignals(True)
        self.composer.clear()
        self.composer.edit.blockSignals(False)
        for path, name, size in self._files.pop(chat_id, []):
            self.composer.add_chip(path, name, size)
        live = self._live.get(chat_id)
        self.composer.set_streaming(live is not None or self.ops.running(chat_id) is not None)
        self._show_header()
        self.header.say_status(self._status_of(live))
        self.header.say_knowledge("")
        self.find_bar.chat_changed()
        self.run_task(self._open(chat_id, self._shown))
        self.refresh_web()

    def refresh_web(self) -> None:
        """The composer's web toggle as the open chat's workspace has web search (read off
        the GUI thread: on opening a chat, and when a workspace's setting was stored)."""
        chat = self.registry.chat(self.chat_id) if self.chat_id else None
        if chat is not None:
            self.run_task(self._load_web(chat.id, chat.workspace_id))

    async def _load_web(self, chat_id: str, ws_id: str | None) -> None:
        from app.records import WebSettings

        settings = await self.ops.web_settings(ws_id) if ws_id else WebSettings()
        if chat_id == self.chat_id:
            self.composer.web.set_default(settings.enabled)

    # ----------------------------------------------------------------- going to a message

    def reveal(self, chat_id: str, message_id: int, words: tuple[str, ...]) -> None:
        """Show *message_id* of *chat_id* (a search result) once the chat has opened."""
        self._reveal = (chat_id, message_id, words)
        if chat_id == self.chat_id and self._draft_for == chat_id:  # open already
            self._go_to_revealed()

    def _go_to_revealed(self) -> None:
        if self._reveal is not None and self._reveal[0] == self.chat_id:
            _, message_id, words = self._reveal
            self._reveal = None
            self.run_task(self._go_to_hit(self.chat_id, message_id, words))

    async def _go_to_hit(self, chat_id: str, message_id: int, words: tuple[str, ...]) -> None:
        """A search hit: its branch shown first (issue 38) when the conversation shows
        another, then the message centred with its words marked."""
        shown = self._shown
        if await self._reveal_branch(chat_id, message_id) and shown == self._shown:
            await self._show_path(chat_id, shown)
        if shown == self._shown:
            await find.go_to(self, message_id, words)

    async def _reveal_branch(self, chat_id: str, message_id: int) -> bool:
        """Make the chat show the branch holding *message_id* (``Operations.reveal``); True
        when it showed another one.  Not while a reply streams in the chat: its branch stays
        (the hit is gone to when it is on it)."""
        if chat_id in self._live or self.ops.running(chat_id) is not None:
            return False
        try:
            _, changes = await self.ops.reveal(chat_id, message_id)
        except CairnError as refused:
            self.sig_error.emit(str(refused))
            return False
        return bool(changes.of(BranchShown))

    def shown_count(self) -> int:
        return self._shown

    def oldest_id(self) -> int | None:
        return self._oldest_id

    def set_oldest_id(self, message_id: int) -> None:
        self._oldest_id = message_id

    def focus_message(self) -> None:
        """The caret into the message box (the conversation, when the chat takes no message:
        archived)."""
        edit = self.composer.edit
        target = edit if edit.isEnabled() and not edit.isReadOnly() else self.view
        target.setFocus(Qt.FocusReason.OtherFocusReason)

    def leave(self) -> None:
        """No chat is shown (a workspace is): the draft saved, the chat's rebuild started,
        the next chat read afresh."""
        if self.chat_id is None:
            return
        self.header.title.commit_pending()
        self.flush_draft()
        if self.composer.editing is None:
            self._files[self.chat_id] = self.composer.attachments()
        self.ops.chat_left(self.chat_id)
        self.chat_id = None
        self.approval.show_for(None)
        self._shown += 1
        self._draft_for = None

    async def _open(self, chat_id: str, shown: int) -> None:
        if self._reveal is not None and self._reveal[0] == chat_id:  # a search hit's branch
            await self._reveal_branch(chat_id, self._reveal[1])
        entries = await self._show_path(chat_id, shown)
        draft = await self.ops.draft(chat_id)
        if shown != self._shown or entries is None:
            return  # another chat was opened meanwhile
        live = self._live.get(chat_id)
        last = next((e for e in reversed(entries) if e.kind == REPLY and e.model), None)
        if live is None and last is not None and last.model:
            self.header.say_status(self._model_name(last.model))
        typed = self.composer.text()  # typed before the chat had opened: kept, after the draft
        self.composer.edit.blockSignals(True)
        self.composer.set_text(f"{draft}\n{typed}" if draft and typed else draft or typed)
        self.composer.edit.blockSignals(False)
        self._draft_for = chat_id
        if typed:
            self._draft_timer.start()
        self._update_actions()
        self.refresh_knowledge()
        self._go_to_revealed()

    async def _show_path(self, chat_id: str, shown: int) -> list[Entry] | None:
        """Read the newest page of the chat's shown path and show it from its end; the entries
        shown (None when another chat was opened meanwhile)."""
        # Under the tail's lock: a turn that ends meanwhile reads from where this page ends.
        async with self._tail:
            messages = await self.ops.page(chat_id, limit=PAGE)
            if shown != self._shown:
                return None
            self.view.has_older = len(messages) >= PAGE
            live = self._live.get(chat_id)
            if live is not None:  # the running turn's rounds are in its live entry
                messages = _through_last_person(messages)
                live.entry.version += 1  # it grew while another chat was shown
            self._last_id = messages[-1].id if messages else 0
            self._oldest_id = messages[0].id if messages else None
            entries = build(messages) + ([live.entry] if live is not None else [])
            self.view.messages.forget_others({e.key for e in entries})
            self.view.empty_text = self._empty_text(chat_id)
            self.view.show_entries(entries)
        self._update_actions()
        return entries

    def _empty_text(self, chat_id: str) -> str:
        chat = self.registry.chat(chat_id)
        lineage = self.registry.lineage(chat.workspace_id if chat is not None else None)
        if not lineage:
            return ("A chat outside any workspace: Claude sees your message and, when Memory "
                    "is on, your personal memory.")
        return (f"Ask anything about {lineage[-1].title}. Claude reads what "
                f"{lineage[0].title}'s knowledge and files hold, and what you settle here "
                "is learned into them.")

    async def _older(self) -> None:
        chat_id, shown, before = self.chat_id, self._shown, self._oldest_id
        try:
            if chat_id is None or before is None:
                return
            messages = await self.ops.page(chat_id, before=before, limit=PAGE)
            if shown != self._shown:
                return
            self.view.has_older = len(messages) >= PAGE
            if messages:
                self._oldest_id = messages[0].id
                self.view.prepend_older(build(messages))
        finally:
            self.view.older_pending = False

    def _show_header(self) -> None:
        chat = self.registry.chat(self.chat_id) if self.chat_id else None
        if chat is None:
            return
        trail = [ws.title for ws in self.registry.lineage(chat.workspace_id)]
        self.header.show_chat(trail, chat.title, chat.id)
        folder = self.registry.workspace(chat.workspace_id) if chat.workspace_id else None
        self.header.show_path(folder.path if folder is not None else "")
        self._show_archived(chat.archived)

    def _show_archived(self, archived: bool) -> None:
        """An archived chat is read, not written in: the composer says how to go on."""
        edit = self.composer.edit
        edit.setReadOnly(archived)
        self.composer.attach.setEnabled(not archived)
        self.composer.send_button.setEnabled(not archived and not self._sending)
        edit.setPlaceholderText("This chat is archived: unarchive it (right-click it in the "
                                "sidebar) to write in it." if archived else "Message…")

    def _chat_changed(self, event: ChatChanged) -> None:
        if getattr(event, "id", None) == self.chat_id:
            self._show_header()
            self._update_actions()  # archived: no Retry or Edit

    def written_elsewhere(self) -> None:
        """Another process wrote (the command line may have added to this chat): what it
        stored after the last message shown is read and shown."""
        if self.chat_id is not None and self.chat_id not in self._live \
                and self._draft_for == self.chat_id:
            self.run_task(self._catch_up(self.chat_id))

    def _setting_changed(self, event: SettingChanged) -> None:
        if getattr(event, "key", None) == "chat.enter_sends":
            self.composer.set_enter_sends(bool(self._settings.get("chat.enter_sends")))

    def refresh_knowledge(self) -> None:
        if self.chat_id is not None and self.isVisible() and self._knowledge_timer.isActive():
            self.run_task(self._knowledge(self.chat_id, self._shown))

    async def _knowledge(self, chat_id: str, shown: int) -> None:
        try:
            state = await self.ops.chat_knowledge(chat_id)
        except CairnError:
            return  # the chat went away meanwhile
        if shown == self._shown:
            self.header.say_knowledge(state.line(), failing=bool(state.failure))

    # ----------------------------------------------------------------- sending

    def _send_clicked(self, text: str, files: list[Path]) -> None:
        if self.chat_id is None or self.chat_id in self._sending:
            return
        self.run_task(self._send(self.chat_id, text, files, self.composer.editing,
                                 self.composer.web.choice()))

    async def _send(self, chat_id: str, text: str, files: list[Path],
                    editing: int | None, web: bool | None = None) -> None:
        self._sending.add(chat_id)
        self.composer.send_button.setEnabled(False)
        self.header.say_status("Sending…")  # until the turn says what it does
        try:
            try:
                if editing is not None:
                    await self.ops.edit(chat_id, editing, text, approver=self.approval.ask)
                else:
                    await self.ops.start_turn(chat_id, text, attachments=files, web=web,
                                              approver=self.approval.ask)
            except CairnError as refused:  # nothing was stored: the text stays to fix
                if chat_id == self.chat_id:
                    self.composer.say(str(refused))
                    self.header.say_status("")
                else:
                    self.sig_error.emit(str(refused))
                return
            rest = await self._sent(chat_id, text, files, editing)
            if editing is None:  # (an edit leaves the draft that was put aside as it was)
                await self.ops.save_draft(chat_id, rest)
            await self._sync_tail(chat_id)
        finally:
            self._sending.discard(chat_id)
            self._show_header()  # Send enabled again (unless the chat was archived meanwhile)

    async def _sent(self, chat_id: str, text: str, files: list[Path],
                    editing: int | None) -> str:
        """The message is stored: it leaves the composer, and whatever was typed after
        Send stays.  Returns what the chat's draft now is."""
        def remainder(now: str) -> str:
            if now == text:
                return ""
            return now[len(text):].lstrip("\n") if now.startswith(text) else now

        if chat_id != self.chat_id:  # another chat is shown: its saved draft is the composer's
            return remainder(await self.ops.draft(chat_id)) if editing is None else ""
        if editing is not None:
            self._drop_from(editing)
        self._draft_timer.stop()
        rest = remainder(self.composer.text())
        if editing is not None:  # back to the draft the edit put aside
            put_aside = self._draft_before_edit or ""
            rest = f"{put_aside}\n{rest}" if put_aside and rest else put_aside or rest
            self._draft_before_edit = None
        self.composer.edit.blockSignals(True)
        self.composer.sent(files)
        self.composer.set_text(rest)
        self.composer.edit.blockSignals(False)
        self._draft_for = chat_id
        self.composer.set_streaming(chat_id in self._live
                                    or self.ops.running(chat_id) is not None)
        self._update_actions()
        if editing is not None and rest:
            await self.ops.save_draft(chat_id, rest)
        return rest

    def stop(self) -> None:
        if self.chat_id is not None:
            self.ops.stop(self.chat_id)

    async def _retry(self, entry: Entry | None = None) -> None:
        """A new version of *entry*'s reply (the person's message: its reply; None: the last
        one), streamed in its place; the old one stays, one switch away (issue 38)."""
        chat_id = self.chat_id
        if chat_id is None:
            return
        message_id = entry.message_ids[0] if entry is not None and entry.message_ids else None
        shown = self._shown
        try:
            await self.ops.retry(chat_id, message_id, approver=self.approval.ask)
        except CairnError as refused:
            self.sig_error.emit(str(refused))
            return
        if chat_id != self.chat_id or shown != self._shown:
            return
        entries = self.view.conversation.entries
        row = next((i for i, e in enumerate(entries) if e is entry), None) \
            if entry is not None else None
        if row is None:
            row = len(entries) - 1
        person = max((i for i in range(row, -1, -1) if entries[i].kind == PERSON
                      and entries[i].message_ids), default=-1)
        keep = [e for e in entries[person + 1:] if e.status == STREAMING]
        self.view.pinned = True  # the new version streams in sight
        self.view.conversation.truncate(person + 1)
        self.view.conversation.append(keep)
        self._last_id = entries[person].message_ids[-1] if person >= 0 else 0
        self.composer.set_streaming(True)
        self._update_actions()

    # ----------------------------------------------------------------- versions and forks

    async def _step_version(self, entry: Entry, step: int) -> None:
        """Show the version before (-1) or after (+1) *entry*'s: its branch, down to the
        newest message below it, read in place of the rows from *entry* on; the row stays
        where it was on screen (issue 38)."""
        chat_id, shown = self.chat_id, self._shown
        if chat_id is None or not entry.message_ids or not 1 <= entry.nth + step <= entry.of:
            return
        async with self._tail:  # no catch-up reads the chat between the switch and its rows
            try:
                versions = await self.ops.versions(chat_id, entry.message_ids[0])
                if shown != self._shown:
                    return
                target = next((m for m in versions if m.version == entry.nth + step), None)
                if target is None:
                    return
                await self.ops.switch(chat_id, target.id)
            except CairnError as refused:
                self.sig_error.emit(str(refused))
                return
            await self._show_branch_from(chat_id, shown, entry, step)
        self._update_actions()
        self.sig_branch_shown.emit()

    async def _show_branch_from(self, chat_id: str, shown: int, entry: Entry,
                                step: int = 0) -> None:
        """The shown path from *entry*'s row on, read again: the rows above stay, and so does
        that row's place on screen (and the keyboard's, on its switch or on the row).  Called
        under the tail's lock."""
        view = self.view
        model = view.conversation
        row = next((i for i, e in enumerate(model.entries) if e is entry), None)
        if row is None or shown != self._shown:
            return
        above = [i for e in model.entries[:row] for i in e.message_ids]
        messages = await self.ops.messages_after(chat_id, max(above, default=0))
        if shown != self._shown or row >= model.rowCount() or model.entries[row] is not entry:
            return
        index = model.index(row, 0)
        top = view.visualRect(index).top()
        switch = view.switch_of(row)
        focused = QApplication.focusWidget()
        on_switch = switch is not None and focused is not None and \
            switch.isAncestorOf(focused)
        current = view.currentIndex().row() >= row  # (its row goes: on the switched one)
        view.pinned = False
        # The current row going (or coming back) must not scroll the view to it: the row
        # switched stays where it is.
        view.setAutoScroll(False)
        bar = view.verticalScrollBar()
        bar.blockSignals(True)  # (a range shrinking meanwhile must not pin it to the bottom)
        try:
            model.truncate(row)
            entries = build(messages)
            model.append(entries)
            self._last_id = messages[-1].id if messages else max(above, default=0)
            view.doItemsLayout()
            if row < model.rowCount():
                index = model.index(row, 0)
                bar.setValue(bar.value() + view.visualRect(index).top() - top)
                if current or on_switch:
                    view.setCurrentIndex(index)
        finally:
            bar.blockSignals(False)
            view.setAutoScroll(True)
        view.pinned = bar.value() >= bar.maximum() - 4
        view.updateEditorGeometries()  # (moved without signals: the row widgets follow)
        view.viewport().update()
        view.refresh_overlays()
        if row < model.rowCount():
            new_switch = view.switch_of(row)
            if on_switch and new_switch is not None:
                button = new_switch.previous if step < 0 else new_switch.next
                if not button.isEnabled():
                    button = new_switch.next if step < 0 else new_switch.previous
                button.setFocus(Qt.FocusReason.OtherFocusReason)
            elif on_switch:
                view.setFocus(Qt.FocusReason.OtherFocusReason)

    async def _fork(self, entry: Entry) -> None:
        """Fork from here: a new chat with the conversation down to *entry*, opened."""
        chat_id = self.chat_id
        if chat_id is None or not entry.message_ids:
            return
        try:
            chat, _ = await self.ops.fork(chat_id, entry.message_ids[-1])
        except CairnError as refused:
            self.sig_error.emit(str(refused))
            return
        self.sig_open_chat.emit(chat.id)

    def _drop_from(self, message_id: int) -> None:
        """An edited message and everything after it left the conversation."""
        entries = self.view.conversation.entries
        row = next((i for i, e in enumerate(entries) if message_id in e.message_ids), None)
        if row is None:
            return
        keep = [e for e in entries[row:] if e.status == STREAMING]
        self.view.conversation.truncate(row)
        self.view.conversation.append(keep)
        stored = [i for e in entries[:row] for i in e.message_ids]
        self._last_id = max(stored, default=0)

    async def _catch_up(self, chat_id: str) -> None:
        """Another process wrote: what it added below the last message shown is shown, and
        when it showed another branch (``cairn chat switch``, an edit), that branch is."""
        shown = self._shown

        def busy() -> bool:  # a turn or a change of the window's own: it shows its result
            return shown != self._shown or chat_id in self._live or chat_id in self._sending \
                or self.ops.running(chat_id) is not None

        async with self._tail:  # (a switch holds it from its change to its rows shown)
            if busy():
                return
            newest = await self.ops.messages(chat_id, limit=1)
            leaf = newest[-1].id if newest else 0
            other = leaf != self._last_id and not await self._continues(chat_id)
        if busy():
            return
        if other:
            await self._show_path(chat_id, shown)
            self.sig_branch_shown.emit()
        else:
            await self._sync_tail(chat_id)

    async def _continues(self, chat_id: str) -> bool:
        """Whether the shown path goes on from the last message shown (rather than being
        another branch now)."""
        if not self._last_id:
            return True
        after = await self.ops.messages_after(chat_id, self._last_id)
        return bool(after) and after[0].parent_id == self._last_id

    async def _sync_tail(self, chat_id: str) -> None:
        """Show what was stored after the last message shown (one read at a time).  While a
        turn runs, only the person's messages: its rounds are in the live entry."""
        async with self._tail:
            messages = await self._stored_since_shown(chat_id)
            if messages is None:
                return
            live = self._live.get(chat_id)
            if live is not None:
                messages = _through_last_person(messages)
            if not messages:
                return
            self._last_id = messages[-1].id
            entries = build(messages)
            model = self.view.conversation
            at = model.row_of(live.entry.key) if live is not None else None
            if at is None:
                model.append(entries)
            else:
                model.insert(at, entries)
            self._update_actions()

    async def _stored_since_shown(self, chat_id: str) -> list[Message] | None:
        """What the chat stored after the last message shown; None when the chat is not (or
        no longer) the one shown.  Called under the tail's lock."""
        if chat_id != self.chat_id:
            return None
        shown = self._shown
        messages = await self.ops.messages_after(chat_id, self._last_id)
        return messages if shown == self._shown else None

    # ----------------------------------------------------------------- the turns' events

    def _turn_event(self, turn: Turn, event: TurnEvent) -> None:
        chat_id = turn.chat_id
        live = self._live.get(chat_id)
        if isinstance(event, TurnEnded):
            if live is not None and live.turn is turn:
                del self._live[chat_id]
            if chat_id == self.chat_id:
                self.run_task(self._turn_over(chat_id, event, live))
            return
        if live is None or live.turn is not turn:
            entry = Entry(key=f"live-{turn.id}", kind=REPLY, status=STREAMING)
            live = self._live[chat_id] = Live(turn, entry)
            if chat_id == self.chat_id:
                self._trim()
                self.view.conversation.append([entry])
                self.composer.set_streaming(True)
                self._update_actions()
        entry = live.entry
        if not isinstance(event, RetryWaiting):
            live.waiting = None  # whatever comes next, the wait is over
        if isinstance(event, RetryWaiting):
            live.waiting, live.waiting_until = event, time.monotonic() + event.seconds
            if chat_id == self.chat_id:
                self._countdown.start()
        elif isinstance(event, KnowledgePulling):
            live.pulling = event.project_title
        elif isinstance(event, (TextDelta, ThinkingDelta)):
            live.started = True
            if isinstance(event, TextDelta):
                entry.add_text(event.text)
            else:
                entry.thinking += event.text
        elif isinstance(event, ToolCall):
            live.call_input = event.input
            return
        elif isinstance(event, ToolResult) and "__" in event.name:  # an MCP call: its line
            from app.tools.mcp import call_details  # (plain Python; only for MCP calls)

            entry.add_call_line(f"{event.summary} · {time.strftime('%H:%M')}", call_details(
                live.call_input or {}, list(event.content), is_error=event.is_error))
            live.call_input = None
        elif isinstance(event, ToolResult):
            entry.add_tool_line(event.summary, is_error=event.is_error)
        elif isinstance(event, ToolNotice):  # an MCP server did not start: said, not stored
            entry.add_tool_line(event.sentence, is_error=True)
            self.sig_error.emit(event.sentence)
        elif isinstance(event, RoundStored):
            return  # (the next round's text says its paragraph break itself: TextDelta)
        else:
            return
        if chat_id == self.chat_id:
            self.header.say_status(self._status_of(live))
            self._dirty.add(chat_id)
            if not self._refresh.isActive():
                self._refresh.start()

    def _trim(self) -> None:
        """A reply starts at the bottom of a chat the person scrolled far back in: the oldest
        rows go (they are read again on the way up), so each refresh lays out few rows."""
        model = self.view.conversation
        if not self.view.pinned or model.rowCount() <= MAX_ROWS:
            return
        entries = model.entries
        cut = next((i for i in range(len(entries) - KEEP_ROWS, len(entries))
                    if entries[i].kind == PERSON and entries[i].message_ids), None)
        if cut is None or cut <= 0:
            return
        model.drop_first(cut)
        self._oldest_id = model.entries[0].message_ids[0]
        self.view.has_older = True

    def _lay_out_live(self) -> None:
        dirty, self._dirty = self._dirty, set()
        live = self._live.get(self.chat_id or "")
        if live is not None and self.chat_id in dirty:
            self.view.entry_changed(live.entry)

    async def _turn_over(self, chat_id: str, event: TurnEnded, live: Live | None) -> None:
        result = event.result
        async with self._tail:
            messages = await self._stored_since_shown(chat_id)
            if messages is None:
                return
            model = self.view.conversation
            if live is not None:
                model.remove(live.entry)
            entries = build(messages)
            if messages:
                self._last_id = messages[-1].id
            model.append(entries)
            shown_rows = model.entries
            person = max((i for i, e in enumerate(shown_rows) if e.kind == PERSON), default=-1)
            if result.status == FAILED and not any(e.kind == REPLY
                                                   for e in shown_rows[person + 1:]):
                # Not even the failure could be stored (a full disk): said here all the same.
                model.append([Entry(key=f"failed-{event.turn_id}", kind=REPLY, status=FAILED,
                                    error=result.error)])
            if live is not None:
                self.view.messages.forget_growth(live.entry.key)
            self.composer.set_streaming(self.ops.running(chat_id) is not None)
            self.header.say_status(self._model_name(result.model))
            self._update_actions()
        if result.notice:
            self.sig_error.emit(result.notice)
        self.refresh_knowledge()

    def _count_down(self) -> None:
        live = self._live.get(self.chat_id or "")
        if live is None or live.waiting is None:
            self._countdown.stop()
            return
        self.header.say_status(self._status_of(live))

    def _status_of(self, live: Live | None) -> str:
        if live is None:
            return ""
        if live.waiting is not None:  # "…; trying again in 12 seconds. Stop ends the wait."
            left = max(0.0, live.waiting_until - time.monotonic())
            return f"{live.waiting.sentence(left=left)} Stop ends the wait."
        if not live.started and live.pulling:
            return f"Pulling {live.pulling} knowledge…"
        return self._model_name(str(self._settings.get("model.chat")))

    def _model_name(self, model: str) -> str:
        return self._catalog.name(model)

    def _update_actions(self) -> None:
        """Edit on each message of the person's, Retry on each reply (each adds a version:
        issue 38), only while nothing streams; the last exchange shows its links without
        hovering."""
        entries = self.view.conversation.entries
        chat = self.registry.chat(self.chat_id) if self.chat_id else None
        running = chat is not None and (self.chat_id in self._live
                                        or self.ops.running(chat.id) is not None)
        busy = chat is None or chat.archived or running
        self.view.set_versions_enabled(not running)
        person = max((i for i, e in enumerate(entries) if e.kind == PERSON), default=-1)
        for i, entry in enumerate(entries):
            actions: tuple[str, ...] = ()
            if busy:
                pass
            elif entry.kind == PERSON and entry.message_ids:
                actions = ("edit", "retry") if i == len(entries) - 1 else ("edit",)
            elif entry.kind == REPLY and (entry.message_ids or i == len(entries) - 1):
                actions = ("retry",)
            last = not busy and i >= person
            if entry.actions != actions or entry.last != last:
                entry.actions, entry.last = actions, last
                self.view.conversation.changed(entry)

    # ----------------------------------------------------------------- links

    def _anchor(self, entry: Entry, href: str, code: str | None) -> None:
        if href.startswith("cairn:copy/"):
            if code is not None:
                QApplication.clipboard().setText(code)
                self._say_copied(entry, code)
        elif href == "cairn:copy-message":
            QApplication.clipboard().setText(entry.text)
        elif href == "cairn:thinking":
            entry.thinking_open = not entry.thinking_open
            self.view.entry_changed(entry)
        elif href.startswith(CALL):  # an MCP call's line: its arguments and result
            index = href[len(CALL):]
            if index.isdigit() and int(index) in entry.calls():
                part = entry.parts[int(index)]
                part.open = not part.open
                self.view.entry_changed(entry)
        elif href == "cairn:retry":
            self.run_task(self._retry(entry))
        elif href in (PREVIOUS_VERSION, NEXT_VERSION):
            self.run_task(self._step_version(entry, -1 if href == PREVIOUS_VERSION else 1))
        elif href == FORK:
            self.run_task(self._fork(entry))
        elif href == "cairn:edit":
            if entry.kind == PERSON and entry.message_ids and self.composer.editing is None:
                self._draft_timer.stop()
                self._draft_before_edit = self.composer.text()  # back after the edit
                if self._draft_for is not None:
                    self.run_task(self.ops.save_draft(self._draft_for, self._draft_before_edit))
                self.composer.begin_edit(entry.message_ids[-1],
                                         entry.parts[0].text if entry.parts else "")
        elif href.startswith(SOURCE):
            source = source_of(entry, href)
            if source is not None:
                open_found(source.url, source.title, self)
        else:
            follow(href, self)

    def _say_copied(self, entry: Entry, code: str) -> None:
        """The code block's Copy says "Copied" for a moment."""
        entry.copied = code
        self.view.entry_changed(entry)

        def back() -> None:
            if entry.copied == code:
                entry.copied = None
                self.view.entry_changed(entry)

        # (With the view as context: a panel deleted meanwhile — its window closed — takes
        # the timer with it, instead of the timer reaching a deleted view.)
        QTimer.singleShot(COPIED_FOR_MS, self.view, back)

    # ----------------------------------------------------------------- files

    async def _attach(self, paths: list[Path]) -> None:
        folders = [p for p in paths if await asyncio.to_thread(p.is_dir)]
        if folders:
            self.sig_folders.emit([str(p) for p in folders])
        for path in paths:
            if path in folders:
                continue
            try:
                info = await self.ops.check_attachment(path)
            except CairnError as refused:
                self.composer.say(str(refused))
                continue
            self.composer.add_chip(path, str(info["name"]), int(info["size"]))
            self.composer.say("")

    async def _paste(self, data: bytes) -> None:
        from ui.chat.thumbnails import thumbnail

        path = await self.ops.keep_pasted_image(data)
        image = await asyncio.to_thread(thumbnail, data)  # decoded off the GUI thread
        await self._attach([path])
        chip = next((c for c in self.composer._chips() if c.path == path), None)
        if chip is not None and image is not None:
            chip.set_preview(image)

    # ----------------------------------------------------------------- the draft

    def _typed(self) -> None:
        if not self._typing_said:
            self._typing_said = True
            self.sig_typing.emit()
        if self.composer.editing is None and self._draft_for == self.chat_id:
            self._draft_timer.start()
        if self.composer.problem.isVisible():
            self.composer.say("")

    def flush_draft(self) -> asyncio.Task[Any] | None:
        """Save the draft now if it changed since it was last saved; text typed before the
        chat had opened (its stored draft not read yet), after that draft."""
        if self._draft_for is None:
            typed = self.composer.text()
            if self.chat_id is None or not typed or self.composer.editing is not None:
                return None
            return self.run_task(self._keep_typed(self.chat_id, typed))
        if not self._draft_timer.isActive():
            return None
        self._draft_timer.stop()
        return self.run_task(self.ops.save_draft(self._draft_for, self.composer.text()))

    async def _keep_typed(self, chat_id: str, typed: str) -> None:
        """The person left *chat_id* (another chat, a quit) before it had opened: what they
        typed is its draft, after the one stored (as the chat's opening would have put it)."""
        stored = await self.ops.draft(chat_id)
        await self.ops.save_draft(chat_id, f"{stored}\n{typed}" if stored else typed)

    def _restore_draft(self) -> None:
        """Editing was cancelled: the draft it put aside comes back."""
        put_aside, self._draft_before_edit = self._draft_before_edit, None
        if put_aside is not None:
            self.composer.edit.blockSignals(True)
            self.composer.set_text(put_aside)
            self.composer.edit.blockSignals(False)
        elif self.chat_id is not None:
            self.run_task(self._reload_draft(self.chat_id, self._shown))

    async def _reload_draft(self, chat_id: str, shown: int) -> None:
        draft = await self.ops.draft(chat_id)
        if shown == self._shown and not self.composer.text():
            self.composer.set_text(draft)

    async def before_quit(self, timeout: float = 3.0) -> None:
        """At quit: the draft saved, the open chat's rebuild started, and each streaming reply
        stopped and stored."""
        waits: list[asyncio.Future[Any]] = []
        if self.chat_id is not None:
            self.ops.chat_left(self.chat_id)
        self._knowledge_timer.stop()
        self._refresh.stop()
        task = self.flush_draft()
        if task is not None:
            waits.append(task)
        for turn in self.ops.running_turns():  # (one that sent nothing yet too)
            turn.cancel()
            waits.append(asyncio.ensure_future(turn.result()))
        if waits:
            await asyncio.wait(waits, timeout=timeout)

    # ----------------------------------------------------------------- drops

    def dragEnterEvent(self, event: QDragEnterEvent) -> None:  # noqa: N802
        if event.mimeData().hasUrls() and any(u.isLocalFile() for u in event.mimeData().urls()):
            event.acceptProposedAction()

    def dropEvent(self, event: QDropEvent) -> None:  # noqa: N802
        paths = [Path(u.toLocalFile()) for u in event.mimeData().urls() if u.isLocalFile()]
        if paths:
            self.run_task(self._attach(paths))
        event.acceptProposedAction()

    async def _rename(self, chat_id: str, title: str) -> None:
        if not chat_id:
            return
        try:
            await self.ops.rename_chat(chat_id, title)
        except CairnError as refused:
            self.sig_error.emit(str(refused))
            self._show_header()


def _through_last_person(messages: list[Message]) -> list[Message]:
    """Up to the person's last message: what a running turn stored after it is in its live
    entry already."""
    cut = max((i for i, m in enumerate(messages) if m.from_person), default=-1)
    return messages[:cut + 1]
