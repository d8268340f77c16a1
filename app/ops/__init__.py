"""The operations the window calls, by domain (:mod:`app.ops.operations` says how they run).

``from app.ops import Operations`` is the composition the window builds; :class:`Changes` is
what one operation changed; :class:`Found` what the search box shows.
"""

from app.ops.operations import Operations
from app.ops.part import Changes
from app.ops.search import Found

__all__ = ["Changes", "Found", "Operations"]
