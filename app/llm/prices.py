"""What a model call cost, from one table of published prices.

Prices in US dollars per million tokens: input, 5-minute cache write, cache read, output.
Source: Anthropic's pricing page (platform.claude.com/docs/en/about-claude/pricing) and the
model overview pages, as published on 2026-11-30.  Sonnet 5.5's cache read fell from $0.20 to
$0.10 on 2026-10-07; Haiku 5.5 is priced in two bands by the request's prompt (input + cache
writes + cache reads).  A model not listed here has no known price: its turns show their
tokens and "cost unknown", never $0.  Models still served whose prices were not published
where we could check them (Fable 5.2, Mythos 5.2) are left out on purpose.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from app.store.messages import Usage

PRICES_CHECKED = "2026-11-30"

# Web search, billed per search on every model besides the tokens its results add
# (Anthropic's pricing page: $10 per 1,000 searches; a fetch costs only its tokens).
WEB_SEARCH_PER_THOUSAND = 10.0


@dataclass(frozen=True, slots=True)
class Price:
    input: float
    cache_write: float
    cache_read: float
    output: float

    def of(self, usage: Usage) -> float:
        return ((usage.input * self.input + usage.cache_write * self.cache_write
                 + usage.cache_read * self.cache_read + usage.output * self.output) / 1_000_000
                + usage.web_searches * WEB_SEARCH_PER_THOUSAND / 1_000)


@dataclass(frozen=True, slots=True)
class Pricing:
    """A model's price, with a dearer band for requests whose prompt exceeds ``long_from``."""

    base: Price
    long: Price | None = None
    long_from: int = 0  # prompt tokens; the long band applies above this

    def price_for(self, usage: Usage) -> Price:
        prompt = usage.input + usage.cache_write + usage.cache_read
        return self.long if self.long is not None and prompt > self.long_from else self.base


_OPUS_4_5 = Pricing(Price(5.0, 6.25, 0.50, 25.0))
_SONNET_4 = Pricing(Price(3.0, 3.75, 0.30, 15.0))
_FABLE_5 = Pricing(Price(10.0, 12.50, 1.00, 50.0))
_FABLE_5_1 = Pricing(Price(10.0, 12.50, 0.25, 50.0))

PRICES: dict[str, Pricing] = {
    "claude-sonnet-5-5": Pricing(Price(2.0, 2.50, 0.10, 10.0)),
    "claude-haiku-5-5": Pricing(Price(0.10, 0.125, 0.01, 0.50),
                                long=Price(0.50, 0.625, 0.05, 2.50), long_from=100_000),
    "claude-opus-5-5": Pricing(Price(4.0, 5.0, 0.20, 20.0)),
    "claude-fable-5-1": _FABLE_5_1,
    "claude-mythos-5-1": _FABLE_5_1,
    "claude-fable-5": _FABLE_5,
    "claude-mythos-5": _FABLE_5,
    "claude-sonnet-5": Pricing(Price(2.0, 2.50, 0.20, 10.0)),
    "claude-opus-5": _OPUS_4_5,
    "claude-opus-4-8": _OPUS_4_5,
    "claude-opus-4-7": _OPUS_4_5,
    "claude-opus-4-6": _OPUS_4_5,
    "claude-opus-4-5": _OPUS_4_5,
    "claude-sonnet-4-6": _SONNET_4,
    "claude-sonnet-4-5": _SONNET_4,
    "claude-haiku-4-5": Pricing(Price(1.0, 1.25, 0.10, 5.0)),
}

_DATED = re.compile(r"^(?P<base>.+)-\d{8}$")  # claude-haiku-4-5-20251001 is claude-haiku-4-5


def pricing(model: str) -> Pricing | None:
    if model in PRICES:
        return PRICES[model]
    dated = _DATED.match(model)
    return PRICES.get(dated.group("base")) if dated else None


def cost(model: str, usage: Usage) -> float | None:
    """What one request cost in dollars, or None when the model's price is not known.

    One request at a time: the long-prompt band is decided by that request's own prompt,
    so a turn of several rounds is the sum of its rounds' costs, not the cost of their sum.
    """
    found = pricing(model)
    return None if found is None else found.price_for(usage).of(usage)


def total(costs: list[float | None]) -> float | None:
    """The sum of several requests' costs; unknown if any of them is."""
    return None if any(c is None for c in costs) else sum(c for c in costs if c is not None)


def estimate_output(streamed: str) -> int:
    """The output tokens *streamed* (text and thinking) took, roughly: four characters a
    token, as English prose runs.  Only for a reply the server never counted."""
    return round(len(streamed) / 4)


def usage_line(usage: Usage, cost_usd: float | None) -> str:
    """A turn's tokens and cost in one line, as the command line and the window show it:
    ``1,240 in · 0 cache write · 3,900 cached · 212 out · $0.0123`` (or ``cost unknown``).
    An output Cairn estimated (a reply stopped before the server counted it) says so, and so
    does the cost worked out from it: ``~120 out (estimated) · ~$0.0031``."""
    about = "~" if usage.estimated else ""
    price = f"{about}${cost_usd:.4f}" if cost_usd is not None else "cost unknown"
    out = f"{about}{usage.output:,} out" + (" (estimated)" if usage.estimated else "")
    searched = (f" · {usage.web_searches:,} web search"
                + ("es" if usage.web_searches != 1 else "")) if usage.web_searches else ""
    return (f"{usage.input:,} in · {usage.cache_write:,} cache write · {usage.cache_read:,} cached"
            f" · {out}{searched} · {price}")
