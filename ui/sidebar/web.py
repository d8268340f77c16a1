"""A workspace's web search settings (its menu's "Web search…"): the switch, the searches one
reply may make, and the sites Claude may use (only these, or any but these).

The dialog saves through the operation it is given and stays open on a refusal, showing the
core's sentence under the fields (nothing is stored then); it closes once the settings are
stored.  Sites are typed one per line or separated by commas or spaces.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable

from PySide6.QtWidgets import (
    QCheckBox,
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QPlainTextEdit,
    QRadioButton,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from app.errors import CairnError
from app.records import WebSettings, Workspace
from ui.tasks import RunTask
from ui.text import Label, sentence

MAX_USES = 50  # as the core takes it (app/store/web.py)
SAYS = ("Claude may search the web and read the pages it finds when it answers in this "
        "workspace's chats (and its folders'). Searches cost $10 per 1,000; each reply's "
        "cost counts them.")

_SEPARATORS = re.compile(r"[\s,]+")


def sites(text: str) -> tuple[str, ...]:
    """The sites typed in a box, each once, in order."""
    return tuple(dict.fromkeys(s for s in _SEPARATORS.split(text) if s))


class WebSearchDialog(QDialog):
    """See the module's docstring.  *save* stores the settings (``ops.set_web_settings`` for
    this workspace); *run_task* runs it."""

    def __init__(self, ws: Workspace, settings: WebSettings,
                 save: Callable[[WebSettings], Awaitable[object]], run_task: RunTask,
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._save, self._run_task = save, run_task
        self.saved: WebSettings | None = None
        self.setWindowTitle(f"{ws.title}: web search")
        self.setAccessibleName("Web search settings")
        layout = QVBoxLayout(self)
        layout.setSpacing(10)
        self.switch = QCheckBox("Web search")
        self.switch.setAccessibleName("Web search")
        self.switch.setChecked(settings.enabled)
        says = Label(SAYS)
        says.setWordWrap(True)
        says.setStyleSheet("color: palette(placeholder-text);")
        layout.addWidget(self.switch)
        layout.addWidget(says)

        self.fields = QWidget()
        form = QFormLayout(self.fields)
        form.setContentsMargins(0, 0, 0, 0)
        self.max_uses = QSpinBox()
        self.max_uses.setRange(1, MAX_USES)
        self.max_uses.setValue(min(MAX_USES, max(1, settings.max_uses)))
        self.max_uses.setAccessibleName("Searches per reply")
        self.max_uses.setToolTip("The most searches (and pages read) one reply may make")
        form.addRow("Searches per reply", self.max_uses)
        self.only = QRadioButton("Only these sites")
        self.only.setAccessibleName("Only these sites")
        self.never = QRadioButton("Any site but these")
        self.never.setAccessibleName("Any site but these")
        self.domains = QPlainTextEdit()
        self.domains.setAccessibleName("Sites")
        self.domains.setPlaceholderText("example.com, docs.python.org …  (none: any site)")
        self.domains.setTabChangesFocus(True)
        self.domains.setFixedHeight(self.domains.fontMetrics().lineSpacing() * 4 + 16)
        # One list: the API takes the allowed sites or the blocked ones, never both.
        listed = settings.allowed_domains or settings.blocked_domains
        (self.never if settings.blocked_domains and not settings.allowed_domains
         else self.only).setChecked(True)
        self.domains.setPlainText("\n".join(listed))
        choice = QVBoxLayout()
        choice.setSpacing(2)
        choice.addWidget(self.only)
        choice.addWidget(self.never)
        form.addRow("Sites", choice)
        form.addRow("", self.domains)
        layout.addWidget(self.fields)

        self.problem = Label("")
        self.problem.setAccessibleName("Web search problem")
        self.problem.setWordWrap(True)
        self.problem.setStyleSheet("color: #dc2626;")
        self.problem.hide()
        layout.addWidget(self.problem)
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Save
                                        | QDialogButtonBox.StandardButton.Cancel)
        self.buttons.accepted.connect(self.save)
        self.buttons.rejected.connect(self.reject)
        layout.addWidget(self.buttons)
        self.switch.toggled.connect(self._switched)
        self._switched(settings.enabled)
        self.resize(480, 0)

    def settings(self) -> WebSettings:
        """What the fields say."""
        listed = sites(self.domains.toPlainText())
        return WebSettings(self.switch.isChecked(), self.max_uses.value(),
                           listed if self.only.isChecked() else (),
                           listed if self.never.isChecked() else ())

    def save(self) -> None:
        self.buttons.setEnabled(False)
        self._run_task(self._saving(self.settings()))

    async def _saving(self, settings: WebSettings) -> None:
        try:
            await self._save(settings)
        except CairnError as refused:  # nothing stored: the fields stay to be fixed
            self.problem.setText(sentence(str(refused)))
            self.problem.show()
            return
        finally:
            self.buttons.setEnabled(True)
        self.saved = settings
        self.accept()

    def _switched(self, on: bool) -> None:
        self.fields.setEnabled(on)  # (off: what they hold is kept for when it is on again)
