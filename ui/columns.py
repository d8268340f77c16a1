"""The window's three columns — the sidebar, the chat, the side panel — and who gives way
when the window narrows.

The chat column keeps priority: it never gets less than :data:`CHAT_MIN` pixels while the
side panel (the knowledge panel) is open because of the window's width.  As the window
narrows, the panel gives way down to its minimum, then the sidebar down to its own, and
then the panel folds itself (and, narrower still, the sidebar gives way down to its minimum
before the chat does); it unfolds when the window is wide enough again, unless the
person folded it themselves.  A panel the person opens in a narrow window stays open (their
choice) until the window's width changes again; when the three columns cannot fit (800 px
wide), the sidebar steps aside for it, so the chat keeps :data:`CHAT_MIN` rather than ~200 px
in which tables broke their words, and comes back when the panel closes or the
window widens.
"""

from __future__ import annotations

from PySide6.QtCore import QSize, Signal
from PySide6.QtGui import QResizeEvent
from PySide6.QtWidgets import QSplitter, QWidget

CHAT_MIN = 420  # px: a readable line of chat text, with the column's margins
PANEL_OPENS_AT = 300  # px: the panel's width when it opens or unfolds


class Columns(QSplitter):
    """The main splitter: ``[sidebar, chat, panel]``.  ``foldable`` once the real panel is
    in place; ``sig_folded_for_room(True)`` when the panel folded itself for lack of room,
    ``(False)`` when it came back."""

    sig_folded_for_room = Signal(bool)

    def __init__(self) -> None:
        super().__init__()
        self.foldable = False
        self.folded_for_room = False
        self.sidebar_away = False  # stepped aside for a panel the person opened, for room

    def _column(self, index: int) -> QWidget:
        widget = self.widget(index)
        assert widget is not None  # (the window puts all three in before any of this runs)
        return widget

    def open_panel(self) -> None:
        """The panel opens (the person asked): its width taken from the sidebar first, as
        far as the sidebar's minimum, then from the chat."""
        self.folded_for_room = False
        sizes = self.sizes()
        if len(sizes) < 3 or sizes[2] > 0:
            return
        room = sum(sizes) - self.handleWidth()  # the panel's handle comes back too
        side_min = self._column(0).minimumWidth()
        if room - PANEL_OPENS_AT - CHAT_MIN < side_min and not self._column(0).isHidden():
            self._column(0).hide()  # no room for three: the sidebar steps aside
            self.sidebar_away = True
            self.setSizes([0, max(0, room + sizes[0] - PANEL_OPENS_AT), PANEL_OPENS_AT])
            return
        sidebar = max(side_min, min(sizes[0], room - PANEL_OPENS_AT - CHAT_MIN))
        self.setSizes([sidebar, max(0, room - sidebar - PANEL_OPENS_AT), PANEL_OPENS_AT])

    def panel_closed(self) -> None:
        """The person closed the panel: a sidebar that stepped aside for it comes back."""
        if self.sidebar_away:
            self._bring_sidebar_back()

    def _bring_sidebar_back(self) -> None:
        self.sidebar_away = False
        sidebar = self._column(0)
        sizes = self.sizes()
        width = max(sidebar.minimumWidth(), 220)
        sidebar.show()
        self.setSizes([width, max(0, sizes[1] - width), *sizes[2:]])

    def fit(self) -> None:
        """Give the chat its room (see the module's docstring)."""
        if not self.foldable or self.count() < 3:
            return
        panel = self._column(2)
        sizes = self.sizes()
        room = sum(sizes)
        if self.sidebar_away:
            side_min = self._column(0).minimumWidth()
            if panel.isHidden() or room - sizes[2] - CHAT_MIN >= side_min:
                self._bring_sidebar_back()  # room again (or no panel): the sidebar returns
            return
        if not panel.isHidden():
            if sizes[1] >= CHAT_MIN:
                return
            panel_min = max(panel.minimumWidth(), panel.minimumSizeHint().width())
            side_min = self._column(0).minimumWidth()
            if room - sizes[0] - CHAT_MIN >= panel_min:  # the panel gives way
                self.setSizes([sizes[0], CHAT_MIN, room - sizes[0] - CHAT_MIN])
            elif room - panel_min - CHAT_MIN >= side_min:  # then the sidebar
                self.setSizes([room - panel_min - CHAT_MIN, CHAT_MIN, panel_min])
            else:  # no room: the panel folds itself, and its room goes to the chat
                panel.hide()
                self.setSizes([sizes[0], room - sizes[0], 0])
                self.folded_for_room = True
                self.sig_folded_for_room.emit(True)
                self._sidebar_gives_way()
        elif sizes[1] < CHAT_MIN:  # the panel away, and still too narrow: the sidebar gives way
            self._sidebar_gives_way()
        elif self.folded_for_room:
            room -= self.handleWidth()
            if room - sizes[0] - PANEL_OPENS_AT >= CHAT_MIN:
                panel.show()
                self.setSizes([sizes[0], room - sizes[0] - PANEL_OPENS_AT, PANEL_OPENS_AT])
                self.folded_for_room = False
                self.sig_folded_for_room.emit(False)

    def _sidebar_gives_way(self) -> None:
        """With the panel folded, the chat's room comes from the sidebar, down to its
        minimum (below that the chat narrows with the window)."""
        sizes = self.sizes()
        side_min = self._column(0).minimumWidth()
        if sizes[1] >= CHAT_MIN or sizes[0] <= side_min:
            return
        both = sizes[0] + sizes[1]
        sidebar = max(side_min, both - CHAT_MIN)
        self.setSizes([sidebar, both - sidebar, *sizes[2:]])

    def minimumSizeHint(self) -> QSize:  # noqa: N802 - Qt's name
        """Without the panel once it can fold itself: the window may narrow past what the
        three columns need, and :meth:`fit` folds the panel then (counted, the window could
        never get narrow enough for it to fold)."""
        hint = super().minimumSizeHint()
        if not self.foldable or self.count() < 3 or self._column(2).isHidden():
            return hint
        panel = self._column(2)
        width = max(panel.minimumWidth(), panel.minimumSizeHint().width()) + self.handleWidth()
        return QSize(max(0, hint.width() - width), hint.height())

    def resizeEvent(self, event: QResizeEvent) -> None:  # noqa: N802 - Qt's name
        super().resizeEvent(event)  # the columns are laid out at the new width first
        if event.oldSize().width() != event.size().width():
            self.fit()
