"""Sent images shown as thumbnails in the person's message.

Whenever rows come into the conversation, each image a message of the person carries is
read (``Operations.attachment_image``, off the GUI thread), decoded and scaled on a worker
thread (``QImage`` may be used there), kept in a small cache, and the row is laid out again
with it.  Until then, and for an image that is gone or unreadable, the row shows the file's
name and size as before.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, Qt
from PySide6.QtGui import QImage

from ui.chat.entries import PERSON

if TYPE_CHECKING:
    from ui.chat.ops import ChatOps
    from ui.chat.view import ConversationView
    from ui.tasks import RunTask

SIDE = 160  # px: a thumbnail's longest side
KEPT = 200  # thumbnails kept in memory


def thumbnail(data: bytes) -> QImage | None:
    """*data* decoded and scaled to fit SIDE × SIDE (a worker thread may call this)."""
    image = QImage.fromData(data)
    if image.isNull():
        return None
    if image.width() <= SIDE and image.height() <= SIDE:
        return image
    return image.scaled(SIDE, SIDE, Qt.AspectRatioMode.KeepAspectRatio,
                        Qt.TransformationMode.SmoothTransformation)


class Thumbnails(QObject):
    """Fills in ``Entry.thumbs`` of the rows *view* shows."""

    def __init__(self, view: ConversationView, ops: ChatOps, run_task: RunTask) -> None:
        super().__init__(view)
        self.view, self.ops, self.run_task = view, ops, run_task
        self._kept: OrderedDict[str, QImage | None] = OrderedDict()  # None: not an image
        self._loading: set[str] = set()
        model = view.conversation
        model.modelReset.connect(self._look)
        model.rowsInserted.connect(lambda *_: self._look())

    def _look(self) -> None:
        for entry in self.view.conversation.entries:
            if entry.kind != PERSON or not entry.images:
                continue
            changed = False
            for _name, sha in entry.images:
                if sha in entry.thumbs:
                    continue
                if sha in self._kept:
                    entry.thumbs[sha] = self._kept[sha]
                    changed = True
                elif sha not in self._loading:
                    self._loading.add(sha)
                    self.run_task(self._load(sha))
            if changed:
                self.view.entry_changed(entry)

    async def _load(self, sha: str) -> None:
        try:
            data = await self.ops.attachment_image(sha)
            image = await asyncio.to_thread(thumbnail, data) if data else None
        finally:
            self._loading.discard(sha)
        self._kept[sha] = image
        while len(self._kept) > KEPT:
            self._kept.popitem(last=False)
        self._look()
