"""What every Settings page is made of: the form (labels left, fields right), notes, buttons,
and a field for a declared setting (``app.store.settings.SETTINGS``) made from its type —
a check box, a number in its range, a list of its choices, a line of text — read and set
the same way whatever it is."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtGui import QFont, QPalette
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QGridLayout,
    QLabel,
    QLayout,
    QLineEdit,
    QPushButton,
    QSizePolicy,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from app.store.settings import SETTINGS, Setting
from ui.text import Label


def heading(text: str) -> QLabel:
    label = Label(text)
    font = QFont(label.font())
    font.setWeight(QFont.Weight.DemiBold)
    label.setFont(font)
    return label


def spacer(height: int) -> QWidget:
    widget = QWidget()
    widget.setFixedHeight(height)
    return widget


def note(name: str, *, muted: bool = False, text: str = "") -> QLabel:
    """A sentence for the person (selectable, wrapped), named for assistive technology."""
    label = Label(text)
    label.setAccessibleName(name)
    label.setWordWrap(True)
    label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
    if muted:
        label.setForegroundRole(QPalette.ColorRole.PlaceholderText)
    return label


def button(text: str, name: str, slot: Callable[[], None]) -> QPushButton:
    made = QPushButton(text)
    made.setAccessibleName(name)
    made.setAutoDefault(False)
    made.clicked.connect(lambda _=False: slot())
    return made


class Form:
    """Labels on the left, fields on the right, notes under their field.  A grid rather than
    QFormLayout, which gives word-wrapped notes in the field column too much height."""

    def __init__(self) -> None:
        self.grid = QGridLayout()
        self.grid.setContentsMargins(16, 18, 16, 12)
        self.grid.setHorizontalSpacing(16)
        self.grid.setVerticalSpacing(10)
        self.grid.setColumnStretch(1, 1)
        self._rows = 0

    def addRow(self, first: str | QWidget, field: QWidget | QLayout | None = None) -> None:
        row, self._rows = self._rows, self._rows + 1
        if isinstance(first, QWidget):  # one widget across both columns
            self.grid.addWidget(first, row, 0, 1, 2)
            return
        if first:
            label = Label(first)
            label.setAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
            self.grid.addWidget(label, row, 0)
            if isinstance(field, QWidget):
                label.setBuddy(field)
        if isinstance(field, QLayout):
            self.grid.addLayout(field, row, 1)
        elif field is not None:
            self.grid.addWidget(field, row, 1)

    def page(self) -> QWidget:
        page = QWidget()
        self.into(page)
        return page

    def into(self, page: QWidget) -> None:
        outer = QVBoxLayout(page)
        outer.setContentsMargins(0, 0, 0, 0)
        outer.addLayout(self.grid)
        outer.addStretch(1)


# ===================================================================== declared fields


def field_for(setting: Setting) -> QWidget:
    """The field a declared setting gets from its type: on/off a check box (its ``row`` the
    box's text), a number a spin box over its range, choices a list, text a line."""
    made: QWidget
    if isinstance(setting.default, bool):
        made = QCheckBox(setting.row or setting.label)
    elif isinstance(setting.default, int):
        spin = QSpinBox()
        low, high = setting.range or (0, 2**31 - 1)
        spin.setRange(low, high)
        if setting.unit:
            spin.setSuffix(f" {setting.unit}")
        spin.setSizePolicy(QSizePolicy.Policy.Fixed, QSizePolicy.Policy.Fixed)
        made = spin
    elif setting.choices:
        box = QComboBox()
        box.setSizePolicy(QSizePolicy.Policy.Fixed, QSizePolicy.Policy.Fixed)
        for value, shown in setting.choices:
            box.addItem(shown, value)
        made = box
    else:
        made = QLineEdit()
    made.setAccessibleName(setting.field or setting.label)
    if setting.tip:
        made.setToolTip(setting.tip)
    return made


def value_of(field: QWidget) -> Any:
    """What a field made by :func:`field_for` holds now."""
    if isinstance(field, QCheckBox):
        return field.isChecked()
    if isinstance(field, QSpinBox):
        return field.value()
    if isinstance(field, QComboBox):
        return field.currentData()
    assert isinstance(field, QLineEdit)
    return field.text().strip()


def show_value(field: QWidget, value: Any) -> None:
    """Show *value* in a field made by :func:`field_for`."""
    if isinstance(field, QCheckBox):
        field.setChecked(bool(value))
    elif isinstance(field, QSpinBox):
        field.setValue(int(value))
    elif isinstance(field, QComboBox):
        field.setCurrentIndex(max(field.findData(value), 0))
    elif isinstance(field, QLineEdit):
        field.setText(str(value))


def spoken(key: str, value: Any) -> str:
    """A declared setting's value in a sentence: on or off, a choice's name, a number with
    its unit; otherwise the value itself."""
    setting = SETTINGS[key]
    if isinstance(value, bool):
        return "on" if value else "off"
    if setting.choices:
        return dict(setting.choices).get(str(value), str(value))
    if setting.unit:
        return f"{value} {setting.unit}"
    return str(value)


class Page(QWidget):
    """A Settings page: the declared settings it shows are in :attr:`fields` (key → field);
    a page with a special field (the models' lists) overrides :meth:`typed` and
    :meth:`show_setting`.  The settings of its ``page`` no code placed are added at the end, each
    on a row named by its label: a new setting needs only its declaration."""

    name = ""  # the ``page`` of the settings it shows

    def __init__(self) -> None:
        super().__init__()
        self.fields: dict[str, QWidget] = {}

    def field(self, key: str) -> QWidget:
        self.fields[key] = field_for(SETTINGS[key])
        return self.fields[key]

    def add_the_rest(self, form: Form, *, also_placed: tuple[str, ...] = ()) -> None:
        for setting in SETTINGS.values():
            if setting.page == self.name and setting.key not in self.fields \
                    and setting.key not in also_placed:
                made = self.field(setting.key)
                form.addRow("" if isinstance(made, QCheckBox) else setting.label, made)

    def shown_keys(self) -> list[str]:
        return list(self.fields)

    def typed(self) -> dict[str, Any]:
        return {key: value_of(field) for key, field in self.fields.items()}

    def show_setting(self, key: str, value: Any) -> None:
        if key in self.fields:
            show_value(self.fields[key], value)
