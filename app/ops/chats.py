"""Chats: create, rename, archive, pin, move, remove; their messages in pages; turns, retries,
edits, versions and forks; attachments and drafts.

The window calls these through :class:`app.ops.Operations`; each runs on the storage thread
through the part's ``run`` / ``read`` (:mod:`app.ops.part`)."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from app.ops.part import Changes, Part

if TYPE_CHECKING:
    from app.chat.turn import EngineListener, Subscription, Turn
    from app.knowledge.status import ChatKnowledge
    from app.records import Chat
    from app.store.messages import Message
    from app.store.registry.removed_chats import RemovedChat
    from app.tools import Approver

log = logging.getLogger(__name__)

T = TypeVar("T")


class ChatOperations(Part):
    """Chats: their list, their messages in pages, turns, versions, attachments, drafts."""

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

    async def start_turn(self, chat_id: str, text: str, *, attachments: Sequence[Path] = (),
                         web: bool | None = None, approver: Approver | None = None) -> Turn:
        """Send: the message is stored, then the reply streams (``ChatEngine.start_turn``).
        *web*: True lets Claude search and fetch the web for this message, False keeps it
        off for this message, None follows the workspace's setting.  *approver* (the chat's
        question) is asked before an MCP tool call its policy does not allow."""
        return await self.cairn.engine.start_turn(chat_id, text, attachments=attachments,
                                                  web=web, approver=approver)

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

    async def reaching(self, chat_id: str, message_id: int, *, before: int, limit: int = 50
                       ) -> tuple[list[Message], bool]:
        """The messages a chat view reads to show *message_id* (see ``ChatStore.reaching``)."""
        return await self.read(lambda: self.cairn.chats.reaching(
            chat_id, message_id, before=before, limit=limit))

    async def messages_before(self, chat_id: str, before: int) -> list[Message]:
        """The whole conversation before message *before*, oldest first (Ctrl+Home)."""
        return await self.read(lambda: self.cairn.chats.messages(chat_id, before=before))
