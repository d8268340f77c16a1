"""Learning from imported chats, when the person asks (issue 40): imported chats are marked
learned as they arrive (``app.store.imported``); per workspace, "Learn from imported chats"
first says what it would cost — the qualifying exchanges × what the knowledge model charges
for one — then runs the rebuild over them one chat at a time, in the background, until done
or stopped.  A stop puts the rest back as not to be learned; what was learned stays.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from app.llm.prices import cost
from app.store import imported as store
from app.store.messages import Usage

if TYPE_CHECKING:
    from app.knowledge.rebuild import Rebuilder
    from app.store.messages import ChatStore
    from app.store.registry.registry import Registry

# What one exchange costs the rebuild, roughly: its own words (4 characters a token), the
# documents and instructions sent with it, and the operations the model answers.
PROMPT_TOKENS = 2_500
OUTPUT_TOKENS = 250


@dataclass(frozen=True, slots=True)
class Backlog:
    workspace_id: str
    chats: tuple[str, ...]
    exchanges: int
    input_tokens: int
    output_tokens: int
    model: str
    cost_usd: float | None

    def sentence(self) -> str:
        if not self.exchanges:
            return "No imported chat of this workspace has anything to learn."
        price = (f"about ${self.cost_usd:,.2f}" if self.cost_usd is not None
                 else "an amount Cairn cannot tell (the model's price is not known)")
        return (f"Learning from {self.exchanges:,} exchange(s) in {len(self.chats):,} imported "
                f"chat(s) costs {price} with {self.model} (about {self.input_tokens:,} tokens "
                f"in, {self.output_tokens:,} out).")

    def to_json(self) -> dict[str, object]:
        return {"workspace": self.workspace_id, "chats": len(self.chats),
                "exchanges": self.exchanges, "input_tokens": self.input_tokens,
                "output_tokens": self.output_tokens, "model": self.model,
                "cost_usd": self.cost_usd}


def backlog(registry: Registry, chats: ChatStore, model: str, workspace_id: str) -> Backlog:
    """What learning the workspace's imported chats would take (reads only)."""
    from app.knowledge.rebuild import exchanges_of

    found = store.unlearned_chats(registry.db, workspace_id)
    exchanges = tokens_in = 0
    kept: list[str] = []
    for chat_id in found:
        qualifying = [e for e in exchanges_of(chats.messages(chat_id)) if e.qualifies]
        if not qualifying:
            continue
        kept.append(chat_id)
        exchanges += len(qualifying)
        tokens_in += sum(PROMPT_TOKENS + (len(e.user) + len(e.reply)) // 4 for e in qualifying)
    tokens_out = exchanges * OUTPUT_TOKENS
    price = cost(model, Usage(input=tokens_in, output=tokens_out)) if exchanges else 0.0
    return Backlog(workspace_id, tuple(kept), exchanges, tokens_in, tokens_out, model, price)


async def learn(registry: Registry, rebuilder: Rebuilder, plan: Backlog,
                progress: Callable[[int, int], object] | None = None) -> int:
    """Run the rebuild over *plan*'s chats, one at a time (the rebuild's own bounds and
    chunks); how many chats were learned.  Cancelling stops it after putting the chats not
    learned back as not to be learned (the one in flight saves nothing: the rebuild's rule)."""
    done = 0
    storage = rebuilder.storage
    for n, chat_id in enumerate(plan.chats):
        old = await storage.run(store.unmark, registry.db, chat_id)
        try:
            report = await rebuilder.rebuild(chat_id)
        except BaseException:
            await asyncio.shield(storage.run(store.mark, registry.db, chat_id, old,
                                             learned=False))
            raise
        learned = report.status in ("applied", "nothing")
        await storage.run(store.mark, registry.db, chat_id, old, learned=learned)
        done += learned
        if progress is not None:
            progress(n + 1, len(plan.chats))
    return done
