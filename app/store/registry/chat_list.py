"""The chats in the sidebar: joining a workspace, manual order, archive and pin.

Reads come from rows kept in memory (``chat_count``/``chat_at``/``chat_row`` and the same for
Pinned and Archived, in O(1)); each change updates them and emits the events that say how.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from typing import Any

from app.base import paths
from app.base.db import utc_now
from app.base.ids import new_id
from app.base.live import Work
from app.base.titles import one_line, visible
from app.errors import Refused
from app.events import (
    ChatAdded,
    ChatChanged,
    ChatMoved,
    ChatsRegrouped,
    WorkEnded,
    WorkStarted,
)
from app.records import Chat, ChatListing, Workspace
from app.store import watermarks
from app.store.registry.memory import Memory
from app.store.registry.state import UNGROUPED, RegistryState, attach_at_top

DEFAULT_CHAT_TITLE = "New chat"


def _missing_chat(verb: str, chat_id: str) -> Refused:
    if verb == "archive":  # the registry's exact sentence (docs/user-guide.md, "The command line")
        return Refused(
            f"cannot archive session '{chat_id}': "
            "live sessions and session persistence hold no such session"
        )
    return Refused(f"cannot {verb} session '{chat_id}': no such session")


class ChatLists:
    """Chat headers and their grouping; every read from memory (*mem*), every change
    through *writer* (the registry's one write path and its start-up load)."""

    def __init__(self, mem: Memory, writer: RegistryState) -> None:
        self.mem = mem
        self.writer = writer
        self.load = writer.loader  # the start-up load: a read waits for its page only
        self._working: set[int] = set()  # tokens of work begun through begin_work

    # ----------------------------------------------------------------- reading

    def workspace_for_folder(self, folder: str | None) -> Workspace | None:
        """The workspace a chat in *folder* would join, if any (the same rule as new_chat)."""
        resolved = paths.try_resolve_folder(folder)
        with self.mem.lock:
            return self.mem.existing(resolved) if resolved is not None else None

    def chat(self, chat_id: str) -> Chat | None:
        chat = self.mem.chats.get(chat_id)
        if chat is None:  # not read yet (the start-up load): its one row
            return self.load.lookup(chat_id)
        return chat

    def get_chat(self, chat_id: str, *, verb: str = "show") -> Chat:
        chat = self.chat(chat_id)
        if chat is None:
            raise _missing_chat(verb, chat_id)
        return chat

    def chats_of(self, ws_id: str) -> list[Chat]:
        """A workspace's visible chats in their manual order (archived ones are hidden)."""
        self.load.need(ws_id)
        with self.mem.lock:
            return list(map(self.mem.chats.__getitem__, self.mem.visible.get(ws_id, ())))

    def chat_order(self, ws_id: str) -> list[str]:
        """A workspace's chats in their manual order, archived ones included (ids)."""
        self.load.need(ws_id)
        with self.mem.lock:
            return list(self.mem.members.get(ws_id, ()))

    def chat_listing(self) -> ChatListing:
        """The sidebar's grouping, from memory: Pinned (most recently pinned first), each
        workspace in display order, Ungrouped (newest first), Archived (most recently first).
        Waits for every chat while the start-up load runs (never asked on the GUI thread then:
        see ``loaded``)."""
        self.load.need(None)
        with self.mem.lock:
            get = self.mem.chats.__getitem__
            return ChatListing(
                pinned=list(map(get, self.mem.pinned)),
                workspaces=[(ws, list(map(get, self.mem.visible[ws.id])))
                            for ws in self.mem.in_order()],
                ungrouped=list(map(get, self.mem.ungrouped)),
                archived=list(map(get, self.mem.archived)),
            )

    # The lists as rows, for a model: a workspace's visible chats (None: Ungrouped), Pinned,
    # Archived.  O(1) each.  While the start-up load runs, the counts come from the stored
    # counts (``chat_count`` table) and never wait; the rows wait for their page.

    def chat_count(self, ws_id: str | None) -> int:
        with self.mem.lock:
            stored = self.load.stored_count(ws_id)
            if stored is not None:
                return stored
            return len(self.mem.chat_rows(ws_id))

    def chat_at(self, ws_id: str | None, row: int) -> Chat:
        self.load.need(ws_id or UNGROUPED)
        with self.mem.lock:
            return self.mem.chats[self.mem.chat_rows(ws_id).at(row)]

    def chat_row(self, chat_id: str) -> int | None:
        """The chat's row in its workspace (or Ungrouped); None when archived."""
        chat = self.chat(chat_id)
        if chat is None:
            raise KeyError(chat_id)
        if chat.archived:
            return None
        self.load.need(chat.workspace_id or UNGROUPED)
        with self.mem.lock:
            chat = self.mem.chats[chat_id]
            return None if chat.archived else self.mem.home(chat).row_of(chat_id)

    def pinned_count(self) -> int:
        return len(self.mem.pinned)

    def pinned_at(self, row: int) -> Chat:
        with self.mem.lock:
            return self.mem.chats[self.mem.pinned.at(row)]

    def pinned_row(self, chat_id: str) -> int | None:
        with self.mem.lock:
            return self.mem.pinned.row_of(chat_id) if chat_id in self.mem.pinned else None

    def archived_count(self) -> int:
        stored = self.load.stored_archived_count()
        if stored is not None:
            return stored
        return len(self.mem.archived)

    def archived_at(self, row: int) -> Chat:
        self.load.need(None)
        with self.mem.lock:
            return self.mem.chats[self.mem.archived.at(row)]

    def archived_row(self, chat_id: str) -> int | None:
        self.load.need(None)
        with self.mem.lock:
            return self.mem.archived.row_of(chat_id) if chat_id in self.mem.archived else None



    # ----------------------------------------------------------------- changing

    def new_chat(self, *, folder: str | None = None, title: str = "",
                 reuse_untouched: bool = False) -> Chat:
        """Record a chat in *folder* (kept as given); it joins the workspace of that folder.

        The folder must resolve to a directory whose canonical path is a registered
        workspace's; anything else (none, missing, a file, no workspace) stays Ungrouped.
        (A chat for a given workspace asks ``Registry.chat_folder`` for its folder first.)

        With *reuse_untouched* and no title, a chat of that list nothing was done in (see
        ``_untouched``) is given instead, moved to the top: the window's New chat, pressed
        again and again, keeps one empty "New chat", not one per press.
        """
        clean = one_line(title)  # NFC, one line, no control or bidi character, capped
        if title.strip() and not visible(clean):
            raise Refused("cannot create a chat: the title has only invisible characters")
        resolved = paths.try_resolve_folder(folder)
        with self.writer.changing() as events:
            with self.writer.writing() as conn:
                home = self.mem.existing(resolved) if resolved is not None else None  # exact match
                again = self._untouched(conn, home, folder) \
                    if reuse_untouched and not clean else None
                if again is None:
                    now = utc_now()
                    chat = Chat(
                        id=new_id("ch"),
                        title=clean or DEFAULT_CHAT_TITLE,
                        folder=folder,
                        workspace_id=home.id if home else None,
                        created_at=now,
                        updated_at=now,
                    )
                    self.insert_chat(conn, chat)
            if again is not None:  # (Ungrouped is newest first already: no place to move to)
                if home is not None and self.mem.visible[home.id].row_of(again.id) != 0:
                    return self.move_chat(again.id, index=0)
                return again
            events.append(ChatAdded(chat.id, chat.workspace_id, self.mem.add_chat(chat), chat))
        return chat

    # How many of a list's newest chats are looked at for an untouched one: the one New chat
    # left is near the top; a deeper look would read more rows for nothing.
    UNTOUCHED_LOOK = 20

    def _untouched(self, conn: sqlite3.Connection, home: Workspace | None,
                   folder: str | None) -> Chat | None:
        """The newest of *home*'s visible chats (Ungrouped's in *folder* when None) that
        nothing was done in: the default title, not pinned, no message, no draft."""
        rows = self.mem.visible[home.id] if home is not None else self.mem.ungrouped
        candidates = []
        for row in range(min(len(rows), self.UNTOUCHED_LOOK)):
            chat = self.mem.chats[rows.at(row)]
            if chat.title == DEFAULT_CHAT_TITLE and not chat.pinned and not chat.archived \
                    and (home is not None or chat.folder == folder):
                candidates.append(chat)
        if not candidates:
            return None
        marks = ",".join("?" * len(candidates))
        empty = {row[0] for row in conn.execute(
            f"SELECT id FROM chat WHERE id IN ({marks}) AND coalesce(draft, '') = '' "  # noqa: S608
            "AND NOT EXISTS (SELECT 1 FROM message WHERE message.chat_id = chat.id)",
            [c.id for c in candidates])}
        return next((c for c in candidates if c.id in empty), None)

    @staticmethod
    def insert_chat(conn: sqlite3.Connection, chat: Chat) -> None:
        conn.execute(
            "INSERT INTO chat (id, title, folder, created_at, updated_at) VALUES (?, ?, ?, ?, ?)",
            (chat.id, chat.title, chat.folder, chat.created_at, chat.updated_at),
        )
        if chat.workspace_id is not None:
            attach_at_top(conn, chat.workspace_id, chat.id)

    def archive_chat(self, chat_id: str) -> Chat:
        """Hide a chat from the grouping; refused while work runs on it.

        In Cairn a chat is its own conversation row, so "every chat that shares the row"
        is this chat.  Live work is known to the process running it: the window's
        turns are seen by the window, not by a separate ``cairn`` command.
        """

        def archive(chat: Chat) -> dict[str, Any] | None:
            kinds = self.writer.fence(chat_id)  # no turn can start until the archive is done
            if kinds:
                raise Refused(
                    f"cannot archive session '{chat_id}': the session is active ({', '.join(kinds)})"
                )
            return _ARCHIVE(chat)

        return self._change_chat(chat_id, "archive", archive)

    def stop_and_archive_chat(self, chat_id: str) -> Chat:
        """Archive first, then ask running work to stop; a failed stop never undoes it."""
        chat = self._change_chat(chat_id, "archive", _ARCHIVE)
        self.writer.live.stop(chat_id)
        return chat

    def unarchive_chat(self, chat_id: str) -> Chat:
        """Back to its place in its workspace (or Ungrouped), without its old pin."""
        return self._change_chat(
            chat_id, "unarchive", lambda c: {"archived_at": None} if c.archived else None)

    def pin_chat(self, chat_id: str) -> Chat:
        """Surface a chat ahead of the others; the most recently pinned leads."""

        def pin(chat: Chat) -> dict[str, Any] | None:
            if chat.archived:
                raise Refused(f"cannot pin session '{chat_id}': the session is archived")
            return None if chat.pinned else {"pin_seq": _NEXT_PIN}

        return self._change_chat(chat_id, "pin", pin)

    def unpin_chat(self, chat_id: str) -> Chat:
        return self._change_chat(chat_id, "unpin", lambda c: {"pin_seq": None} if c.pinned else None)

    def rename_chat(self, chat_id: str, title: str) -> Chat:
        clean = one_line(title)  # NFC, one line, no control or bidi character, capped

        def rename(chat: Chat) -> dict[str, Any] | None:
            if not title.strip():
                raise Refused(f"cannot rename chat '{chat.title}': the title is empty")
            if not visible(clean):
                raise Refused(f"cannot rename chat '{chat.title}': the title has only "
                              "invisible characters")
            return {"title": clean} if chat.title != clean else None

        return self._change_chat(chat_id, "rename", rename)

    def _change_chat(self, chat_id: str, verb: str,
                     decide: Callable[[Chat], dict[str, Any] | None]) -> Chat:
        """Decide on the stored state (after catching up), then write; None = already so."""
        with self.writer.changing() as events:
            with self.writer.writing() as conn:
                chat = self.get_chat(chat_id, verb=verb)
                changes = decide(chat)
                if changes is None:
                    return chat  # nothing to write
                if changes.get("pin_seq") is _NEXT_PIN:
                    changes["pin_seq"] = (
                        conn.execute("SELECT coalesce(max(pin_seq), 0) + 1 FROM chat").fetchone()[0]
                    )
                changes["updated_at"] = utc_now()
                columns = ", ".join(f"{name} = ?" for name in changes)
                conn.execute(f"UPDATE chat SET {columns} WHERE id = ?", (*changes.values(), chat_id))
            before, chat = chat, chat._replace(**changes)
            events.extend(self.mem.restate(before, chat))
        return chat

    def move_chat(self, chat_id: str, *, index: int) -> Chat:
        """Put a chat at *index* (0-based) among its workspace's visible chats."""
        with self.writer.changing() as events:
            with self.writer.writing() as conn:
                chat = self.get_chat(chat_id, verb="move")
                ws_id = chat.workspace_id
                if chat.archived:
                    raise Refused(f"cannot move session '{chat_id}': the session is archived")
                if ws_id is None:
                    raise Refused(
                        f"cannot move session '{chat_id}': the session belongs to no workspace"
                    )
                order = [i for i in self.mem.members[ws_id] if i != chat_id]
                visible = [i for i in order if not self.mem.chats[i].archived]
                if not 0 <= index <= len(visible):
                    count = len(visible) + 1
                    raise Refused(
                        f"cannot move session '{chat_id}' to position {index + 1}: "
                        f"its workspace shows {count} chat{'s' if count > 1 else ''}"
                    )
                # Archived chats keep their slots; the chat goes just before the visible chat
                # now at *index*, or just after the last visible one.
                if index < len(visible):
                    at = order.index(visible[index])
                else:
                    at = order.index(visible[-1]) + 1 if visible else len(order)
                order.insert(at, chat_id)
                conn.execute("DELETE FROM membership WHERE workspace_id = ?", (ws_id,))
                conn.executemany(
                    "INSERT INTO membership (workspace_id, chat_id, position) VALUES (?, ?, ?)",
                    ((ws_id, c, p) for p, c in enumerate(order)),
                )
            self.mem.members[ws_id] = order
            rows = self.mem.visible[ws_id]
            old_row = rows.remove(chat_id)
            rows.insert(index, chat_id)
            if index != old_row:
                events.append(ChatMoved(chat_id, ws_id, old_row, index))
        return chat

    def move_chat_to(self, chat_id: str, ws_id: str | None, *, index: int = 0) -> Chat:
        """Move a chat into workspace *ws_id* (None: Ungrouped), at *index* among its visible
        chats: it now runs in that workspace's folder, so from its next message on it sees
        that workspace's context and teaches that workspace's knowledge.

        Refused for an archived chat, while a reply or a rebuild runs in it (the turn was
        built on the old context), and for an unknown workspace.  Into Ungrouped the chat has
        no folder and takes its place by creation, as Ungrouped chats do.
        """
        with self.writer.changing() as events:
            with self.writer.writing() as conn:
                chat = self.get_chat(chat_id, verb="move")
                if chat.archived:
                    raise Refused(f"cannot move session '{chat_id}': the session is archived")
                if self.writer.fence(chat_id):  # no turn can start until the move is done
                    raise Refused(f"cannot move session '{chat_id}': a reply or a knowledge "
                                  "update is running in it; stop it or wait until it ends")
                target = self.mem.workspaces.get(ws_id) if ws_id is not None else None
                if ws_id is not None and target is None:
                    raise Refused(f"cannot move session '{chat_id}': no workspace '{ws_id}'")
                if ws_id == chat.workspace_id:
                    return chat  # already there: reordering is move_chat's
                order: list[str] = []
                if ws_id is not None:
                    order = list(self.mem.members[ws_id])
                    visible = [i for i in order if not self.mem.chats[i].archived]
                    if not 0 <= index <= len(visible):
                        count = len(visible) + 1
                        raise Refused(
                            f"cannot move session '{chat_id}' to position {index + 1}: that "
                            f"workspace shows {count} chat{'s' if count > 1 else ''}")
                    if index < len(visible):
                        order.insert(order.index(visible[index]), chat_id)
                    else:
                        order.insert(order.index(visible[-1]) + 1 if visible else len(order),
                                     chat_id)
                folder = target.path if target is not None else None
                now = utc_now()
                # What it said here and was not learned yet is learned here, not where it goes.
                watermarks.remember_origin(conn, chat_id, chat.workspace_id)
                conn.execute("UPDATE chat SET folder = ?, updated_at = ? WHERE id = ?",
                             (folder, now, chat_id))
                if chat.workspace_id is not None:
                    conn.execute("DELETE FROM membership WHERE chat_id = ?", (chat_id,))
                if ws_id is not None:
                    conn.execute("DELETE FROM membership WHERE workspace_id = ?", (ws_id,))
                    conn.executemany(
                        "INSERT INTO membership (workspace_id, chat_id, position)"
                        " VALUES (?, ?, ?)", ((ws_id, c, p) for p, c in enumerate(order)))
            self.mem.home(chat).remove(chat_id)
            if chat.workspace_id is not None:
                self.mem.members[chat.workspace_id].remove(chat_id)
            moved = chat._replace(folder=folder, workspace_id=ws_id, updated_at=now)
            self.mem.chats[chat_id] = moved
            if ws_id is not None:
                self.mem.members[ws_id] = order
            row = self.mem.show(moved)
            events.append(ChatsRegrouped(ids=(chat_id,), to=ws_id, rows=(row,)))
            events.append(ChatChanged(chat_id, moved))
        return moved

    # ----------------------------------------------------------------- rows and events




    # ----------------------------------------------------------------- live work

    def begin_work(self, chat_id: str, kind: str, stop: Callable[[], object]) -> Work:
        """Register running work (a ``turn``, a ``background job``) on a known, unarchived chat.

        Never while a change is archiving or moving the chat (its fence, ``_fence``): work
        never starts on a chat that is being archived, and never waits on a write either.
        Call :meth:`end_work` when it finishes.
        """
        # Found before the memory lock: a chat the start-up load has not read yet is looked
        # up under the load's lock, which is never taken under ``mem.lock``.
        found = self.get_chat(chat_id, verb="start work in")
        with self.mem.lock:
            # While a load is under way nothing has changed (every change ends it first): what
            # was found holds; after it, memory is the truth.
            chat = self.mem.chats.get(chat_id, found if self.load.loading else None)
            if chat is None:
                raise _missing_chat("start work in", chat_id)
            if chat.archived:
                raise Refused(f"cannot start work in session '{chat_id}': the session is archived")
            work = self.writer.live.begin(chat_id, kind, stop, fenced=lambda: Refused(
                f"cannot start work in session '{chat_id}': the session is being archived or "
                "moved; try again in a moment"))
            self._working.add(work.token)
        self.writer.hub.emit(WorkStarted(chat_id, kind))  # outside the memory lock: listeners may write
        return work

    def end_work(self, work: Work) -> None:
        """Unregister *work*; a second call for the same work does nothing."""
        with self.mem.lock:
            self.writer.live.end(work)
            if work.token not in self._working:
                return
            self._working.discard(work.token)
        self.writer.hub.emit(WorkEnded(work.chat_id, work.kind))


_NEXT_PIN = object()  # "the next pin number", computed inside the write


def _ARCHIVE(chat: Chat) -> dict[str, Any] | None:
    # The pin is cleared in the same write; the chat keeps its place in its workspace.
    return None if chat.archived else {"archived_at": utc_now(), "pin_seq": None}
