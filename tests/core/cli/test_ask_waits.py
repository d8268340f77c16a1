"""`cairn ask` after its reply: it says what the knowledge update waits
for (a 429's wait) on stderr, in one line, and Ctrl+C leaves the update for later without
losing the reply: the exchange stays pending for the next rebuild."""

from __future__ import annotations

import io
import json
import os
import signal
import threading

from app import cli
from tests.helpers import LONG, add_op

LAUNCH = add_op("Launch is 2027-04-15", "launch date is 2027-04-15")


class _Stderr(io.StringIO):
    """stderr that runs *then* once, when a line with *words* is written (any thread)."""

    def __init__(self, words: str, then) -> None:
        super().__init__()
        self._words, self._then, self._done = words, then, threading.Event()
        self._lock = threading.Lock()

    def write(self, text: str) -> int:
        with self._lock:
            written = super().write(text)
        if self._words in text and not self._done.is_set():
            self._done.set()
            self._then()
        return written


def test_cairn_ask_says_what_the_knowledge_update_waits_for(online, fake, workspace):
    online.close()
    fake.reply_text(LONG)
    fake.reply_error_status(429, "rate_limit_error", "Slow down.", headers={"retry-after": "1"})
    fake.reply_json("update_knowledge", {"ops": [LAUNCH]})
    out, err = io.StringIO(), io.StringIO()
    code = cli.main(["ask", "--folder", workspace.path, "When do we launch?"],
                    stdout=out, stderr=err)
    assert code == 0, err.getvalue()
    said = [line for line in err.getvalue().splitlines() if line.startswith("Updating")]
    assert said == [f"Updating knowledge: the server at 127.0.0.1:{fake.port} asked to wait "
                    "1 second (Ctrl+C leaves it for later; your reply is saved)."]
    assert "Knowledge: 1 change applied" in err.getvalue()


def test_jsonl_says_the_wait_as_an_event(online, fake, workspace):
    online.close()
    fake.reply_text(LONG)
    fake.reply_error_status(429, "rate_limit_error", "Slow down.", headers={"retry-after": "1"})
    fake.reply_json("update_knowledge", {"ops": []})
    out, err = io.StringIO(), io.StringIO()
    assert cli.main(["ask", "--folder", workspace.path, "--jsonl", "When?"],
                    stdout=out, stderr=err) == 0
    kinds = [json.loads(line).get("type") for line in out.getvalue().splitlines()]
    assert kinds.index("reply") < kinds.index("knowledge waiting")


def test_ctrl_c_leaves_the_update_for_later_and_keeps_the_reply(isolated, online, fake,
                                                                 workspace):
    # asyncio.run takes Ctrl+C over only from Python's own handler (tests/process has the
    # same as a real process, signalled from outside)
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    online.close()
    fake.reply_text(LONG)
    fake.reply_error_status(429, "rate_limit_error", "Slow down.", headers={"retry-after": "50"})
    out = io.StringIO()
    # Ctrl+C as a terminal sends it, once the wait is said (the SDK then sleeps 50 seconds).
    err = _Stderr("Updating knowledge:", lambda: os.kill(os.getpid(), signal.SIGINT))
    code = cli.main(["ask", "--folder", workspace.path, "When do we launch?"],
                    stdout=out, stderr=err)
    assert code == 130
    assert out.getvalue() == LONG + "\n"
    assert "Knowledge update left for later: your reply is saved" in err.getvalue()
    assert "partial" not in err.getvalue()

    from app.cairn import Cairn

    cairn = Cairn.open(isolated)
    try:
        (chat,) = cairn.registry.chats_of(workspace.id)
        reply = cairn.chats.messages(chat.id)[-1]
        assert (reply.text, reply.status) == (LONG, "complete")
        assert [e.reply for e in cairn.rebuilder.pending(chat.id)] == [LONG]  # still pending
    finally:
        cairn.close()
    fake.reply_json("update_knowledge", {"ops": [LAUNCH]})
    err = io.StringIO()
    assert cli.main(["knowledge", "rebuild", chat.id], stdout=io.StringIO(), stderr=err) == 0
    assert "Knowledge: 1 change applied" in err.getvalue()
