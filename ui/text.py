"""Text from data, shown as text: never as markup, never as a link.

Qt guesses the format of a label's, a tooltip's and a message box's text: what looks like
HTML is rendered as HTML.  A workspace titled ``<img src=//host/share/t.png>Design`` would
make the window fetch that image (on Windows a UNC path: an SMB connection that can leak the
person's credentials), and a file named ``<a href=file:///…calc.exe>report</a>.md`` would
put a live link into a question whose links Qt hands to the operating system.  Titles,
names, descriptions, model output and sentences carrying them all come from data, so the
window's labels, tooltips and message boxes go through here.

Nothing here touches a Qt enum when imported or for text without a tag: the first Qt enum
sets up PySide6's whole Qt namespace (about 45 ms), which the first paint does not wait for.
"""

from __future__ import annotations

import html
import re

from PySide6.QtWidgets import QDialog, QLabel, QMessageBox, QPushButton, QWidget

_CODE_SPAN = re.compile(r"`([^`\n]+)`")


def sentence(text: str) -> str:
    """A core sentence as the window shows it: the command line's `code` spans (``cairn key
    set``) lose their backticks, which only a terminal reader expects, and it starts with a
    capital (the command line's refusals start lower-case, after "cairn: ")."""
    text = _CODE_SPAN.sub(r"\1", text)
    return text[:1].upper() + text[1:] if text[:1].islower() else text


def make_plain(label: QLabel) -> QLabel:
    """*label* shows its text as written from now on: no markup, no links."""
    from PySide6.QtCore import Qt

    label.setTextFormat(Qt.TextFormat.PlainText)
    label.setOpenExternalLinks(False)
    return label


class Label(QLabel):
    """A label that shows its text as written (``QLabel`` renders what looks like HTML).

    Plain from the first text that could be taken for markup (Qt's guess needs a ``<``);
    until then nothing Qt could render differently has been shown.
    """

    def __init__(self, text: str = "", parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._plain = False
        self._told = False
        self.setText(text)

    def named(self, name: str) -> Label:
        """Give the label the fixed accessible *name* UI automation finds it by, and tell
        assistive technology the text it shows too (its description follows every text): a
        fixed name alone hides what a changing label says ("3 of 12", a status)."""
        self.setAccessibleName(name)
        self._told = True
        self.setAccessibleDescription(self.text())
        return self

    def setText(self, text: str) -> None:  # noqa: N802 - Qt's name
        if not self._plain and "<" in text:
            make_plain(self)
            self._plain = True
        super().setText(text)
        if self._told:
            self.setAccessibleDescription(text)


def tip(text: str) -> str:
    """*text* as a tooltip that shows it as written.

    Tooltips have no text format of their own: Qt renders one that looks like markup.  The
    escaped text inside ``<qt>`` is always rendered as rich text, which comes out as exactly
    *text* (line breaks and runs of spaces kept).  Text without a tag needs no escaping.
    """
    if "<" not in text:
        return text
    return f"<qt><p style='white-space:pre-wrap'>{html.escape(text)}</p></qt>"


def message_box(icon: QMessageBox.Icon, title: str, text: str, *, informative: str = "",
                buttons: QMessageBox.StandardButton | None = None,
                parent: QWidget | None = None) -> QMessageBox:
    """A message box whose texts are plain text: no markup rendered, no link to click."""
    box = QMessageBox(parent)
    box.setIcon(icon)
    box.setWindowTitle(title)
    if buttons is not None:
        box.setStandardButtons(buttons)
    from PySide6.QtCore import Qt

    box.setTextFormat(Qt.TextFormat.PlainText)
    box.setText(text)
    if informative:
        box.setInformativeText(informative)
    # The informative text has a label of its own, which setTextFormat does not reach; and
    # a message box's labels hand their links to the operating system.
    for label in box.findChildren(QLabel):
        make_plain(label)
    return box


def confirm(icon: QMessageBox.Icon, title: str, text: str, action: str, *,
            informative: str = "", role: QMessageBox.ButtonRole = QMessageBox.ButtonRole.AcceptRole,
            parent: QWidget | None = None, action_is_default: bool = False) -> bool:
    """Ask before *action* (a button named so, beside Cancel): whether the person chose it.
    Enter takes the default button: Cancel, or *action* when it is easily undone
    (*action_is_default*, e.g. Archive).  Texts are plain text, as in :func:`message_box`."""
    box = message_box(icon, title, text, informative=informative,
                      buttons=QMessageBox.StandardButton.Cancel, parent=parent)
    box.setAccessibleName(title)
    go = box.addButton(action, role)
    go.setAccessibleName(action)
    cancel = box.button(QMessageBox.StandardButton.Cancel)
    default = go if action_is_default or not isinstance(cancel, QPushButton) else cancel
    box.setDefaultButton(default)
    default.setFocus()  # the focus ring and the default frame on the same button
    bold = default.font()
    bold.setBold(True)  # the style's default frame is faint: the button Enter takes shows
    default.setFont(bold)
    box.exec()
    return box.clickedButton() is go


async def answered(box: QDialog) -> int:
    """Show *box* window-modal and wait for the person's answer: its result code (a message
    box's button: ``clickedButton()``).  For a question asked inside a task.  ``exec`` would run
    an event loop of its own inside the task's step, and while it runs asyncio refuses to enter
    any other task: each one that comes due is dropped for good (the catch-up with other
    processes, the folders' checks), long after the question is gone.  A cancelled wait (a
    quit) closes the question."""
    import asyncio

    answer: asyncio.Future[int] = asyncio.get_running_loop().create_future()

    def finished(code: int) -> None:
        if not answer.done():
            answer.set_result(code)

    box.finished.connect(finished)
    box.open()
    try:
        return await answer
    finally:
        if not answer.done():
            box.reject()
