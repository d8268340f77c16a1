"""Where file dialogs open, and a folder dialog that takes a folder not made yet.

File dialogs (Attach, Add files, Export, Import) open in the workspace's folder, never in
the current directory (which, for an app started from a launcher, is anywhere).  Where that
folder is comes from the registry's memory: nothing here waits on the disk.
"""

from __future__ import annotations

import os

from PySide6.QtWidgets import QFileDialog, QWidget

from app.records import OK
from app.store.registry.registry import Registry


def home() -> str:
    return os.path.expanduser("~")


def workspace_folder(registry: Registry | None, ws_id: str | None,
                     fallback: str | None = None) -> str:
    """The folder a dialog about *ws_id* opens in: the workspace's folder while it is there
    (as last looked at), else *fallback*, else the home folder."""
    ws = registry.workspace(ws_id) if registry is not None and ws_id else None
    if ws is not None and ws.status == OK:
        return ws.path
    return fallback or home()


class FolderDialog(QFileDialog):
    """Choose a folder, or type the name of one not made yet (its parent must exist): the
    import and the restore make it.  Qt's own dialog (a native one cannot be taught to take
    a new name)."""

    def __init__(self, parent: QWidget | None, title: str, start: str, *,
                 instruction: str = "", accept: str = "") -> None:
        super().__init__(parent, title, start)
        self.setFileMode(QFileDialog.FileMode.Directory)
        self.setOption(QFileDialog.Option.ShowDirsOnly, True)
        self.setOption(QFileDialog.Option.DontUseNativeDialog, True)
        self.setLabelText(QFileDialog.DialogLabel.FileName, "Folder:")
        if accept:
            self.setLabelText(QFileDialog.DialogLabel.Accept, accept)
        self.chosen: str | None = None
        self.instruction: QWidget | None = None
        if instruction:  # in the dialog, whole: a window title is cut short (issue 36)
            from PySide6.QtWidgets import QGridLayout

            from ui.text import Label

            label = Label(instruction)
            label.setWordWrap(True)
            label.setObjectName("folder-dialog-instruction")
            layout = self.layout()
            if isinstance(layout, QGridLayout):
                layout.addWidget(label, layout.rowCount(), 0, 1, layout.columnCount())
            self.instruction = label

    def accept(self) -> None:
        typed = self.selectedFiles()
        path = typed[0] if typed else ""
        if path and not os.path.exists(path) and os.path.isdir(os.path.dirname(path)):
            self.chosen = path  # a new folder: made by the operation that asked
            self.done(QFileDialog.DialogCode.Accepted)
            return
        super().accept()
        if self.result() == QFileDialog.DialogCode.Accepted:
            chosen = self.selectedFiles()
            self.chosen = chosen[0] if chosen else None


def ask_folder(parent: QWidget | None, title: str, start: str) -> str | None:
    """A folder, existing or new, or None when the person cancelled."""
    dialog = FolderDialog(parent, title, start)
    return dialog.chosen if dialog.exec() == QFileDialog.DialogCode.Accepted else None
