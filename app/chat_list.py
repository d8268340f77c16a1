"""The chats in the sidebar: joining a workspace, manual order, archive and pin (spec 004)."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from typing import Any

from app import paths
from app.db import utc_now
from app.errors import Refused
from app.ids import new_id
from app.live import Work
from app.records import Chat, ChatListing, Workspace
from app.registry_state import RegistryState, attach_at_top

DEFAULT_CHAT_TITLE = "New chat"


def _missing_chat(verb: str, chat_id: str) -> Refused:
    if verb == "archive":  # spec 004's exact sentence
        return Refused(
            f"cannot archive session '{chat_id}': "
            "live sessions and session persistence hold no such session"
        )
    return Refused(f"cannot {verb} session '{chat_id}': no such session")


class ChatList(RegistryState):
    """Chat headers and their grouping; every read from memory."""

    # ----------------------------------------------------------------- reading

    def workspace_for_folder(self, folder: str | None) -> Workspace | None:
        """The workspace a chat in *folder* would join, if any (the same rule as new_chat)."""
        resolved = paths.try_resolve_folder(folder)
        with self._lock:
            return self._existing(resolved) if resolved is not None else None

    def chat(self, chat_id: str) -> Chat | None:
        return self._chats.get(chat_id)

    def get_chat(self, chat_id: str, *, verb: str = "show") -> Chat:
        chat = self._chats.get(chat_id)
        if chat is None:
            raise _missing_chat(verb, chat_id)
        return chat

    def chats_of(self, ws_id: str) -> list[Chat]:
        """A workspace's visible chats in their manual order (archived ones are hidden)."""
        with self._lock:
            return [c for c in map(self._chats.__getitem__, self._members.get(ws_id, ()))
                    if not c.archived]

    def chat_listing(self) -> ChatListing:
        """The sidebar's grouping, from memory."""
        with self._lock:
            return self._listing()

    def _listing(self) -> ChatListing:
        chats = self._chats.values()
        pinned = sorted((c for c in chats if c.pinned), key=lambda c: c.pin_seq or 0, reverse=True)
        ungrouped = [c for c in chats if c.workspace_id is None and not c.archived]
        ungrouped.reverse()  # loaded oldest first; newest leads, like a workspace's new chats
        archived = sorted((c for c in chats if c.archived), key=lambda c: c.archived_at or "",
                          reverse=True)
        return ChatListing(
            pinned=pinned,
            workspaces=[(ws, self.chats_of(ws.id)) for ws in self.workspaces()],
            ungrouped=ungrouped,
            archived=archived,
        )

    # ----------------------------------------------------------------- changing

    def new_chat(self, *, folder: str | None = None, title: str = "") -> Chat:
        """Record a chat in *folder* (kept as given); it joins the workspace of that folder.

        The folder must resolve to a directory whose canonical path is a registered
        workspace's; anything else (none, missing, a file, no workspace) stays Ungrouped.
        """
        resolved = paths.try_resolve_folder(folder)
        with self._lock:
            with self._writing() as conn:
                home = self._existing(resolved) if resolved is not None else None  # exact match
                now = utc_now()
                chat = Chat(
                    id=new_id("ch"),
                    title=" ".join(title.split()) or DEFAULT_CHAT_TITLE,
                    folder=folder,
                    workspace_id=home.id if home else None,
                    created_at=now,
                    updated_at=now,
                )
                self._insert_chat(conn, chat)
            self._chats[chat.id] = chat
            if home is not None:
                self._members[home.id].insert(0, chat.id)
        self._emit("chat-added", chat.id)
        return chat

    @staticmethod
    def _insert_chat(conn: sqlite3.Connection, chat: Chat) -> None:
        conn.execute(
            "INSERT INTO chat (id, title, folder, created_at, updated_at) VALUES (?, ?, ?, ?, ?)",
            (chat.id, chat.title, chat.folder, chat.created_at, chat.updated_at),
        )
        if chat.workspace_id is not None:
            attach_at_top(conn, chat.workspace_id, chat.id)

    def archive_chat(self, chat_id: str) -> Chat:
        """Hide a chat from the grouping; refused while work runs on it.

        In Cairn a chat is its own conversation row, so "every chat that shares the row"
        (spec 004) is this chat.  Live work is known to the process running it: the window's
        turns are seen by the window, not by a separate ``cairn`` command.
        """

        def archive(chat: Chat) -> dict[str, Any] | None:
            kinds = self.live.kinds(chat_id)  # under the lock: no turn can start meanwhile
            if kinds:
                raise Refused(
                    f"cannot archive session '{chat_id}': the session is active ({', '.join(kinds)})"
                )
            return _ARCHIVE(chat)

        return self._change_chat(chat_id, "archive", archive)

    def stop_and_archive_chat(self, chat_id: str) -> Chat:
        """Archive first, then ask running work to stop; a failed stop never undoes it."""
        chat = self._change_chat(chat_id, "archive", _ARCHIVE)
        self.live.stop(chat_id)
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
        clean = " ".join(title.split())

        def rename(chat: Chat) -> dict[str, Any] | None:
            if not clean:
                raise Refused(f"cannot rename session '{chat_id}': the title is empty")
            return {"title": clean} if chat.title != clean else None

        return self._change_chat(chat_id, "rename", rename)

    def _change_chat(self, chat_id: str, verb: str,
                     decide: Callable[[Chat], dict[str, Any] | None]) -> Chat:
        """Decide on the stored state (after catching up), then write; None = already so."""
        with self._lock:
            with self._writing() as conn:
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
            chat = chat._replace(**changes)
            self._chats[chat_id] = chat
        self._emit("chat-changed", chat_id)
        return chat

    def move_chat(self, chat_id: str, *, index: int) -> Chat:
        """Put a chat at *index* (0-based) among its workspace's visible chats."""
        with self._lock:
            with self._writing() as conn:
                chat = self.get_chat(chat_id, verb="move")
                ws_id = chat.workspace_id
                if chat.archived:
                    raise Refused(f"cannot move session '{chat_id}': the session is archived")
                if ws_id is None:
                    raise Refused(
                        f"cannot move session '{chat_id}': the session belongs to no workspace"
                    )
                order = [i for i in self._members[ws_id] if i != chat_id]
                visible = [i for i in order if not self._chats[i].archived]
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
            self._members[ws_id] = order
        self._emit("chat-changed", chat_id)
        return chat

    # ----------------------------------------------------------------- live work

    def begin_work(self, chat_id: str, kind: str, stop: Callable[[], object]) -> Work:
        """Register running work (a ``turn``, a ``background job``) on a known, unarchived chat.

        Taken under the same lock as archiving, so work never starts on a chat that is being
        archived.  Call :meth:`end_work` when it finishes.
        """
        with self._lock:
            chat = self.get_chat(chat_id, verb="start work in")
            if chat.archived:
                raise Refused(f"cannot start work in session '{chat_id}': the session is archived")
            return self.live.begin(chat_id, kind, stop)

    def end_work(self, work: Work) -> None:
        self.live.end(work)


_NEXT_PIN = object()  # "the next pin number", computed inside the write


def _ARCHIVE(chat: Chat) -> dict[str, Any] | None:
    # The pin is cleared in the same write; the chat keeps its place in its workspace.
    return None if chat.archived else {"archived_at": utc_now(), "pin_seq": None}
