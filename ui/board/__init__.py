"""The status board: every workspace as a card in the column of its build status.

Four list views, one per status (idea, planning, building, shipped), each over a small model
of cards painted by one delegate.  The columns are recomputed from the registry's memory (no
storage read) whenever a workspace event arrives through the bridge, coalesced per turn of
the event loop, and applied as row inserts, removals and moves: selection and scrolling
survive a change, and a change made by the command line shows once the registry catches up.
Every change of status goes through :class:`~app.ops.Operations`, never on the GUI thread.
"""

from ui.board.cards import Card, ColumnModel
from ui.board.view import Board

__all__ = ["Board", "Card", "ColumnModel"]
