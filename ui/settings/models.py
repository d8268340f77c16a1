"""Settings → Models: the chat's and the knowledge's model (from the cached models list, or
typed), their effort, the composer's Enter, the knowledge's idle delay.  Nothing switches a
model silently: a retired or deprecated model gets a button that names its successor."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtGui import QStandardItemModel
from PySide6.QtWidgets import QComboBox, QLabel, QPushButton, QVBoxLayout, QWidget

from app.llm.catalog import Catalog, ModelInfo
from app.store.settings import Settings
from ui.settings.form import Form, Page, heading, note, spacer
from ui.text import tip

PURPOSES = (("chat", "model.chat", "model.chat_effort", "Chat"),
            ("knowledge", "model.knowledge", "model.knowledge_effort", "Knowledge"))


def model_label(info: ModelInfo) -> str:
    """How the models list shows a model: its name, and its lifecycle when not active."""
    if info.lifecycle == "retired":
        return f"{info.display_name} — retired"
    if info.lifecycle == "deprecated":
        when = f", retires {info.retires_at[:10]}" if info.retires_at else ""
        return f"{info.display_name} — deprecated{when}"
    return info.display_name


class ModelsPage(Page):
    """The two models' lists are this page's own fields; effort, Enter and the idle delay
    are declared fields.  *switch* is the dialog's: it saves a successor at once."""

    name = "models"

    def __init__(self, settings: Settings, catalog: Catalog, *,
                 switch: Callable[[str], None]) -> None:
        super().__init__()
        self._settings = settings
        self._catalog = catalog
        form = Form()
        self.model_boxes: dict[str, QComboBox] = {}
        self.effort_boxes: dict[str, QComboBox] = {}
        self._lifecycle: dict[str, QLabel] = {}
        self._lifecycle_rows: dict[str, QWidget] = {}
        self.switch: dict[str, QPushButton] = {}
        for purpose, _setting, effort_key, title in PURPOSES:
            model = QComboBox()
            model.setEditable(True)
            model.setInsertPolicy(QComboBox.InsertPolicy.NoInsert)
            model.setAccessibleName(f"{title} model")
            model.setMinimumContentsLength(28)
            model.setToolTip("Choose from the models list, or type a model name (a local "
                             "server's, say)")
            model.currentIndexChanged.connect(lambda _=0, p=purpose: self.model_chosen(p))
            model.editTextChanged.connect(lambda _="", p=purpose: self.model_chosen(p))
            effort = self.field(effort_key)
            assert isinstance(effort, QComboBox)
            # A retired or deprecated model: what that means, and the one-click way out.
            lifecycle = note(f"{title} model lifecycle")
            lifecycle.setWordWrap(False)  # one short sentence; wrapping here mis-sizes the row
            button = QPushButton()
            button.setObjectName(f"switch_{purpose}_model")
            button.setAccessibleName(f"Switch {purpose} model")  # named for its target when shown
            button.setAutoDefault(False)
            button.clicked.connect(lambda _=False, p=purpose: switch(p))
            row = QWidget()
            column = QVBoxLayout(row)
            column.setContentsMargins(0, 0, 0, 4)
            column.setSpacing(6)
            column.addWidget(lifecycle)
            column.addWidget(button, 0, Qt.AlignmentFlag.AlignLeft)
            row.hide()
            self.model_boxes[purpose] = model
            self.effort_boxes[purpose] = effort
            self._lifecycle[purpose] = lifecycle
            self._lifecycle_rows[purpose] = row
            self.switch[purpose] = button
            if purpose == "knowledge":
                form.addRow(spacer(14))
                form.addRow(heading("Knowledge updates"))
                form.addRow(note("Knowledge help", muted=True, text=(
                    "When a chat goes quiet, Cairn merges what it taught into the workspace "
                    "knowledge and your personal memory, with this model.")))
            else:
                form.addRow(heading("Chats"))
            form.addRow("Model", model)
            form.addRow("", row)
            form.addRow("Effort", effort)
            if purpose == "chat":
                form.addRow("Composer", self.field("chat.enter_sends"))
        form.addRow("Update after", self.field("knowledge.idle_seconds"))
        self.add_the_rest(form, also_placed=tuple(s for _p, s, _e, _t in PURPOSES))
        self.models_hint = note("Models list status", muted=True)
        form.addRow(spacer(14))
        form.addRow(self.models_hint)
        form.into(self)

    # ------------------------------------------------------------ the models' own fields

    def shown_keys(self) -> list[str]:
        return [*(setting for _p, setting, _e, _t in PURPOSES), *self.fields]

    def typed(self) -> dict[str, Any]:
        wanted = {setting: self.model_id(purpose) for purpose, setting, _e, _t in PURPOSES}
        return {**wanted, **super().typed()}

    def show_setting(self, key: str, value: Any) -> None:
        super().show_setting(key, value)
        for purpose, setting, _effort, _title in PURPOSES:
            if key == setting:
                box = self.model_boxes[purpose]
                if box.findData(value) < 0:
                    known = self._catalog.info(str(value))
                    box.addItem(model_label(known) if known else str(value), value)
                box.setCurrentIndex(box.findData(value))
                self.model_chosen(purpose)

    def spoken(self, value: Any) -> str:
        """A model in a sentence: its display name when the list knows it."""
        info = self._catalog.info(str(value))
        return info.display_name if info is not None else str(value)

    def model_id(self, purpose: str) -> str:
        box = self.model_boxes[purpose]
        text = box.currentText().strip()
        row = box.findText(text, Qt.MatchFlag.MatchExactly)
        if row >= 0 and box.itemData(row):
            return str(box.itemData(row))
        return text

    def fill_models(self, server: str) -> None:
        """The models boxes from the cached models list, keeping what each box shows."""
        catalog = self._catalog
        # Only a list this server gave: another server's would claim models it never listed.
        models = catalog.models() if catalog.has_list(server) else []
        for purpose, setting, _effort, _title in PURPOSES:
            box = self.model_boxes[purpose]
            wanted = self.model_id(purpose) if box.count() else self._settings.get(setting)
            box.blockSignals(True)
            box.clear()
            for info in models:
                box.addItem(model_label(info), info.id)
                box.setItemData(box.count() - 1, tip(info.id), Qt.ItemDataRole.ToolTipRole)
            if wanted and box.findData(wanted) < 0:
                known = catalog.info(wanted)
                box.addItem(model_label(known) if known else wanted, wanted)
            item_model = box.model()
            for row in range(box.count()):  # a retired model cannot be chosen, only kept
                listed = catalog.info(box.itemData(row))
                if isinstance(item_model, QStandardItemModel) and listed is not None \
                        and listed.lifecycle == "retired" and box.itemData(row) != wanted:
                    item_model.item(row).setEnabled(False)
            box.setCurrentIndex(max(box.findData(wanted), 0))
            box.blockSignals(False)
            self.model_chosen(purpose)
        if not models:
            self.models_hint.setText(
                f"No models list yet from {server}: it is fetched when the connection is "
                "saved and works; or type the model name your server serves.")
        else:
            fetched = (catalog.fetched_at or "")[:10]
            self.models_hint.setText(f"{len(models)} models listed by {server}"
                                     + (f" on {fetched}" if fetched else "") + ".")

    def model_chosen(self, purpose: str) -> None:
        """The lifecycle of the model shown, the switch to its successor, and the effort
        levels it takes."""
        catalog = self._catalog
        model_id = self.model_id(purpose)
        info = catalog.info(model_id)
        label, switch = self._lifecycle[purpose], self.switch[purpose]
        successor = catalog.successor(model_id) if info is not None else None
        ending = info is not None and info.lifecycle in ("retired", "deprecated")
        if info is not None and ending:
            day = f" on {info.retires_at[:10]}" if info.retires_at else ""
            if info.lifecycle == "retired":
                label.setText(f"{info.display_name} was retired{day}: Cairn refuses to use it.")
            else:
                label.setText(f"{info.display_name} is deprecated and retires{day or ' soon'}.")
        if successor is not None and ending:
            switch.setText(f"Switch to {successor.display_name}")
            switch.setAccessibleName(f"Switch to {successor.display_name}")
            switch.setProperty("successor", successor.id)
        switch.setVisible(successor is not None and ending)
        self._lifecycle_rows[purpose].setVisible(ending)
        effort = self.effort_boxes[purpose]
        item_model = effort.model()
        if isinstance(item_model, QStandardItemModel):
            for row in range(effort.count()):
                level = effort.itemData(row)
                takes = (info is None or not info.described or level == ""
                         or level in info.efforts or row == effort.currentIndex())
                item_model.item(row).setEnabled(takes)
