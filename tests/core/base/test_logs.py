"""Cairn's log never holds a message body, whatever the SDK's log level:
``ANTHROPIC_LOG=debug`` makes the SDK log whole requests and responses at DEBUG level."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path

from app.base.logs import setup_logging

ROOT = Path(__file__).resolve().parents[3]

ASKED = "What did we decide about the PENGUIN-7741 launch?"
REPLIED = ("We decided the ZEBRA-3319 launch moves to March, after the pricing review, and "
           "the budget stays at $40,000.")


def test_anthropic_log_debug_writes_no_body_into_cairn_log(isolated, fake, folders):
    """The real command in its own process: the SDK reads ANTHROPIC_LOG at import."""
    (root,) = folders("Acme")
    fake.reply_text(REPLIED)  # the rebuild after the turn finds no reply scripted: it fails
    env = {**os.environ, "ANTHROPIC_LOG": "debug", "ANTHROPIC_API_KEY": "sk-ant-log-test",
           "ANTHROPIC_BASE_URL": fake.base_url}
    done = subprocess.run([sys.executable, "-m", "ui.main", "ask", "--folder", root, ASKED],
                          cwd=ROOT, capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    assert REPLIED in done.stdout
    assert any(ASKED in str(r.body) for r in fake.requests)  # sent, so the SDK logged it
    log = (isolated / "logs" / "cairn.log").read_text(encoding="utf-8")
    assert "PENGUIN-7741" not in log and "ZEBRA-3319" not in log
    assert "sk-ant-log-test" not in log
    assert "HTTP Request: POST" in log  # the SDK's INFO lines still arrive: only bodies go


async def test_the_sdk_logger_at_debug_writes_no_body_into_cairn_log(online, fake, workspace,
                                                                     isolated):
    setup_logging()
    loggers = [logging.getLogger(name) for name in ("anthropic", "httpx", "httpx2", "httpcore",
                                                    "httpcore2")]
    levels = [lg.level for lg in loggers]
    root = logging.getLogger()
    root_level = root.level
    for lg in loggers:
        lg.setLevel(logging.DEBUG)
    root.setLevel(logging.DEBUG)
    try:
        chat = online.registry.new_chat(folder=workspace.path)
        fake.reply_text(REPLIED)
        result = await online.engine.send(chat.id, ASKED)
    finally:
        for lg, level in zip(loggers, levels):
            lg.setLevel(level)
        root.setLevel(root_level)
    assert result.status == "complete"
    log = (isolated / "logs" / "cairn.log").read_text(encoding="utf-8")
    assert "PENGUIN-7741" not in log and "ZEBRA-3319" not in log
