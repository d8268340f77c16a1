"""The MCP SDK is loaded only when a server is used: never by `cairn workspace list`, never by
the window's start (its first paint), even with servers configured and turned on."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.helpers import fresh_python

ROOT = Path(__file__).resolve().parents[3]
_LOADED = ("sorted(m for m in sys.modules if m.split('.')[0] in ('mcp', 'mcp_types', 'httpx2'))")


def _configure_servers(count: int, folder: Path) -> None:
    """*count* servers, each on in a workspace (a program that would fail the test if run)."""
    from app.cairn import Cairn
    from app.store.mcp import ServerConfig

    folder.mkdir()
    cairn = Cairn.open()
    try:
        ws, _ = cairn.registry.add_workspace(str(folder))
        for n in range(count):
            cairn.mcp.add(ServerConfig(f"srv{n}", command=sys.executable,
                                       args=("-c", "raise SystemExit(3)")))
            cairn.mcp.turn_on(f"srv{n}", ws.id)
    finally:
        cairn.close()


def test_workspace_list_never_loads_the_mcp_sdk(isolated, tmp_path):
    _configure_servers(3, tmp_path / "Thesis")
    probe = ("import sys; from ui.main import main; code = main(['workspace', 'list', '--json']);"
             f"print('LOADED', {_LOADED}); raise SystemExit(code)")
    assert "LOADED []" in fresh_python(probe)


def test_the_window_starts_without_the_mcp_sdk(isolated, tmp_path):
    _configure_servers(10, tmp_path / "Thesis")
    probe = ("import sys; from ui.app import run;"
             "code = run(data_dir=None, open_path=None, exit_after_first_paint=True);"
             f"print('LOADED', {_LOADED}); raise SystemExit(code)")
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen")
    done = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "LOADED []" in done.stdout
