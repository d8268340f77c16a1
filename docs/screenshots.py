"""Renders the window (wide, narrow at 860×640, with the sidebar's filter in use, with the
Search box open, on a reply that searched the web, on a reply with three versions), the knowledge panel and its history, the status board and Settings
(and its Tools tab), the workspace's Tools page and an MCP call's line unfolded
offscreen, light and dark, with realistic data, into docs/screenshots/*.png.

Run: uv run python docs/screenshots.py
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
OUT = ROOT / "docs" / "screenshots"

KNOWLEDGE = """## Working style & preferences
- Formal but warm tone; no exclamation marks in customer copy
- British spelling (colour, organise)

## Facts
- Launch date is 2027-04-15 (updated 2026-11-30)
- Accent colour is orange #FF5500; secondary is charcoal #2B2B2B
- Pricing page lives at acme.com/pricing

## Decisions
- Logo uses the stacked mark on dark backgrounds
- Never recommend competitor Globex

## People & contacts
- Dana Ruiz (dana@acme.com) signs off contracts
- Sam Lee is the designer for the launch

## Assets & links
- Brand guidelines: brand-guidelines.pdf (knowledge file)
- Launch brief in Notion: https://notion.so/acme/launch

## Open questions
- Do we ship the German site at launch?
"""

# The history the screenshots show: a hand edit, then what a chat taught.
KNOWLEDGE_BEFORE = KNOWLEDGE.replace(
    "- Launch date is 2027-04-15 (updated 2026-11-30)\n", "- Launch date is 2027-03-01\n"
).replace("- Sam Lee is the designer for the launch\n", "").replace(
    "- Launch brief in Notion: https://notion.so/acme/launch\n", "")


REPLY_1 = """Here is the palette as the brand guidelines define it, with the CSS variables the
website already uses:

| Role | Colour | Hex | Use |
|:--|:--|:--|:--|
| Accent | Orange | `#FF5500` | Buttons, links, highlights |
| Secondary | Charcoal | `#2B2B2B` | Body text, dark backgrounds |
| Neutral | Paper | `#F7F5F2` | Page background |

```css
:root {
  --acme-accent: #FF5500;
  --acme-charcoal: #2B2B2B;
  --acme-paper: #F7F5F2;
}
```

Keep orange for **one** action per screen; the guidelines call it the "single spark" rule."""

REPLY_2 = """Three options for the launch headline, in the formal-but-warm tone:

1. **Analytics your whole team can read.** Launching 15 April 2027.
2. **From data to decisions, without the detour.**
3. **See the business clearly.** Acme is ready when you are.

- [x] British spelling
- [x] No exclamation marks
- [ ] Checked with Dana Ruiz before it goes out"""


def add_conversation(cairn: object, chat_id: str) -> None:
    """A conversation as it is stored after two turns (thinking, a file read, costs)."""
    from app.store.messages import Usage

    chats = cairn.chats  # type: ignore[attr-defined]
    chats.append(chat_id, "user", [{"type": "text", "text": "What are our brand colours? "
                                    "I need them for the launch page."}])
    chats.append(chat_id, "assistant", [
        {"type": "thinking", "thinking": "The knowledge lists orange and charcoal; the brand "
         "guidelines file has the full palette.", "signature": "sig"},
        {"type": "tool_use", "id": "toolu_1", "name": "readWorkspaceFile",
         "input": {"file_id": "wf_1"}}],
        model="claude-sonnet-5-5", usage=Usage(1240, 0, 3900, 88), cost_usd=0.0042)
    chats.append(chat_id, "user", [{"type": "tool_result", "tool_use_id": "toolu_1",
                                    "content": [{"type": "text", "text":
                                                 "[brand-guidelines.txt — page 1 of 2]\n…"}]}])
    chats.append(chat_id, "assistant", [{"type": "text", "text": REPLY_1}],
                 model="claude-sonnet-5-5", usage=Usage(2410, 0, 3900, 212), cost_usd=0.0074)
    chats.append(chat_id, "user", [{"type": "text", "text": "Draft three launch headlines."}])
    chats.append(chat_id, "assistant", [{"type": "text", "text": REPLY_2}],
                 model="claude-sonnet-5-5", usage=Usage(2690, 0, 4100, 164), cost_usd=0.0075)


def add_mcp(cairn: object, root: Path, website: str) -> None:
    """MCP servers (git on a real repository, started when the Tools page shows its tools;
    two imported from Claude Desktop), git and time on in Website, git_status always allowed
    there, and a chat whose reply called git_log."""
    import subprocess

    from app.store.mcp import ServerConfig
    from app.store.messages import Usage

    repo = root / "code" / "acme-site"
    repo.mkdir(parents=True)
    git = ["git", "-C", str(repo), "-c", "user.name=Ada", "-c", "user.email=ada@acme.example"]
    subprocess.run([*git, "init", "-q", "-b", "main"], check=True)
    for n, message in enumerate(("Hero copy, first pass", "Pricing table: annual plans",
                                 "Fix the footer links on mobile")):
        (repo / f"page-{n}.md").write_text(message + "\n")
        subprocess.run([*git, "add", "."], check=True)
        subprocess.run([*git, "commit", "-q", "-m", message], check=True)
    mcp = cairn.mcp  # type: ignore[attr-defined]
    mcp.add(ServerConfig("git", command="mcp-server-git", args=("--repository", str(repo))))
    mcp.import_servers([
        ServerConfig("time", command="uvx", args=("mcp-server-time",
                                                  "--local-timezone=Europe/London")),
        ServerConfig("github", command="npx", args=("-y", "@modelcontextprotocol/server-github"),
                     env={"GITHUB_PERSONAL_ACCESS_TOKEN": "ghp_screenshot"})])
    mcp.turn_on("git", website)
    mcp.turn_on("time", website)
    mcp.set_policy("git", "git_status", website, "allow")
    chats = cairn.chats  # type: ignore[attr-defined]
    chat = cairn.registry.new_chat(  # type: ignore[attr-defined]
        folder=str(root / "Acme Inc" / "Website"), title="What shipped this week")
    chats.append(chat.id, "user", [{"type": "text", "text": "What changed on the site this "
                                    "week? Keep it short."}])
    log = subprocess.run([*git, "log", "--format=Commit: %h%nAuthor: %an%nDate: %ad%n"
                          "Message: %s%n"], capture_output=True, text=True, check=True).stdout
    chats.append(chat.id, "assistant", [
        {"type": "tool_use", "id": "toolu_git", "name": "git__git_log",
         "input": {"repo_path": str(repo), "max_count": 5}}],
        model="claude-sonnet-5-5", usage=Usage(1810, 0, 0, 64), cost_usd=0.0064)
    chats.append(chat.id, "user", [{"type": "tool_result", "tool_use_id": "toolu_git",
                                    "content": [{"type": "text",
                                                 "text": "Commit history:\n" + log}]}])
    chats.append(chat.id, "assistant", [{"type": "text", "text":
                 "Three changes this week:\n\n- **Mobile footer**: its links work again.\n"
                 "- **Pricing**: the table now shows annual plans.\n"
                 "- **Hero copy**: a first pass is in."}],
                 model="claude-sonnet-5-5", usage=Usage(2230, 0, 0, 58), cost_usd=0.0076)


BAKE_REPLIES = (
    """A timeline that works back from 11:00:

1. **Friday 21:00**: feed the starter (1:5:5) and leave it at room temperature.
2. **Saturday 06:00**: mix the dough, rest 30 minutes, add the salt.
3. **06:30–09:30**: bulk ferment with four sets of folds in the first two hours.
4. **09:30**: shape, then proof for about an hour.
5. **10:15**: bake at 250 °C, lid on 20 minutes, lid off 20 minutes.""",
    """If you would rather sleep in, let the fridge do the waiting:

1. **Friday 18:00**: feed the starter; mix the dough at **22:00**.
2. **Overnight**: bulk ferment in the fridge (about 10 hours at 4 °C).
3. **Saturday 08:00**: shape straight from the fridge, proof 90 minutes.
4. **09:45**: bake at 250 °C, 20 minutes covered, 20 uncovered.
5. **10:30**: cool on a rack; it slices cleanly by 11:00.""",
    """The shortest plan, all on Saturday (a warm kitchen, 26 °C):

1. **05:00**: feed the starter with warm water.
2. **08:00**: mix and fold every 20 minutes for an hour.
3. **09:00**: shape and proof 45 minutes.
4. **10:00**: bake for 40 minutes; it will be a little denser.""",
)


def add_versions(cairn: object, chat_id: str) -> None:
    """A reply retried twice (three versions, the second shown) and a follow-up edited once:
    the conversation a person comparing answers has."""
    from app.store.messages import Usage

    chats = cairn.chats  # type: ignore[attr-defined]
    asked = chats.append(chat_id, "user", [{"type": "text", "text": "Plan a sourdough bake "
                                            "for Saturday: the bread ready by 11:00."}])
    replies = []
    for n, text in enumerate(BAKE_REPLIES):
        if n:
            chats.retry(chat_id, asked.id)
        replies.append(chats.append(chat_id, "assistant", [{"type": "text", "text": text}],
                                    model="claude-sonnet-5-5", usage=Usage(1310, 0, 2900, 190),
                                    cost_usd=0.0061))
    chats.switch(chat_id, replies[1].id)
    first = chats.append(chat_id, "user", [{"type": "text", "text": "Is 10 hours too long "
                                            "in the fridge?"}])
    chats.append(chat_id, "assistant", [{"type": "text", "text": "Not at 4 °C."}],
                 model="claude-sonnet-5-5", usage=Usage(1520, 0, 2900, 40), cost_usd=0.0032)
    chats.resend(chat_id, first.id, "Can the dough stay in the fridge for 14 hours instead?")
    chats.append(chat_id, "assistant", [{"type": "text", "text": (
        "Yes: 12 to 16 hours at 4 °C is fine and gives a tangier loaf. Shape it cold, and "
        "give the proof an extra 20–30 minutes, since the dough starts colder.")}],
        model="claude-sonnet-5-5", usage=Usage(1580, 0, 2900, 52), cost_usd=0.0035)


def make_data(root: Path) -> None:
    """Folders and a registry a person might have after a few weeks."""
    from app.cairn import Cairn
    from app.store.messages import Usage

    for name in ("Acme Inc/Brand", "Acme Inc/Q3 planning", "Acme Inc/Website",
                 "Thesis", "Personal site", "Recipes"):
        (root / name).mkdir(parents=True, exist_ok=True)
    cairn = Cairn.open(Path(os.environ["CAIRN_DATA_DIR"]))
    reg = cairn.registry
    first = reg.first_use_workspace_id
    if first:
        reg.remove_workspace(first)
    recipes, _ = reg.add_workspace(str(root / "Recipes"))
    thesis, _ = reg.add_workspace(str(root / "Thesis"))
    site, _ = reg.add_workspace(str(root / "Personal site"))
    acme, _ = reg.add_workspace(str(root / "Acme Inc"))
    brand, _ = reg.add_workspace(str(root / "Acme Inc" / "Brand"), at_end=True)
    reg.add_workspace(str(root / "Acme Inc" / "Q3 planning"), at_end=True)
    web, _ = reg.add_workspace(str(root / "Acme Inc" / "Website"), at_end=True)
    reg.update_workspace(acme.id, description="B2B analytics start-up; launch in April 2027",
                         build_status="building")
    reg.update_workspace(thesis.id, build_status="planning")
    reg.update_workspace(site.id, build_status="shipped")
    reg.update_workspace(web.id, build_status="planning")
    for title in ("Logo ideas", "Colour palette review", "Launch copy"):
        chat = reg.new_chat(folder=str(root / "Acme Inc" / "Brand"), title=title)
    reg.pin_chat(chat.id)
    add_conversation(cairn, chat.id)
    learned = chat.id
    for title in ("Pricing questions", "Investor update draft"):
        reg.new_chat(folder=str(root / "Acme Inc"), title=title)
    reg.new_chat(folder=str(root / "Acme Inc" / "Website"), title="Homepage hero text")
    # A reply that searched the web: its lines, its sources and its citation marks.
    from app.records import WebSettings
    from tests.ui.web_replies import QUESTION, web_reply

    cairn.web.set(web.id, WebSettings(enabled=True, max_uses=5))
    release = reg.new_chat(folder=str(root / "Acme Inc" / "Website"), title="PySide6 release")
    cairn.chats.append(release.id, "user", [{"type": "text", "text": QUESTION}])
    cairn.chats.append(release.id, "assistant", web_reply(), model="claude-sonnet-5-5",
                       usage=Usage(8120, 0, 0, 214), cost_usd=0.0571)
    methods = reg.new_chat(folder=str(root / "Thesis"), title="Methods chapter outline")
    reg.pin_chat(methods.id)
    reg.new_chat(folder=str(root / "Recipes"), title="Sourdough timings")
    bake = reg.new_chat(folder=str(root / "Recipes"), title="Saturday bake plan")
    add_versions(cairn, bake.id)
    reg.new_chat(title="Scratch: regex for dates")
    reg.new_chat(title="Trip to Lisbon")
    cairn.knowledge.save(acme.id, KNOWLEDGE_BEFORE, source="user")
    cairn.knowledge.save(acme.id, KNOWLEDGE, source="rebuild", chat_id=chat.id)
    # What the chat proposed that Cairn would not apply by itself: it waits for the person.
    from app.store.suggestions import Proposed

    cairn.knowledge.save_rebuild([], chat_id=chat.id, covered=0, notes={}, suggestions=[
        Proposed(acme.id, "update", "Facts", ("Launch date is 2027-04-15 (updated 2026-11-30)",),
                 "Launch date is 2027-05-10",
                 "Only your words replace a value you stated: Claude said this, not you.",
                 "I believe the launch moved to 2027-05-10", "claude")])
    guidelines = root / "brand-guidelines.txt"
    guidelines.write_text("Acme brand guidelines\n" + "Logo, colour and type rules.\n" * 400)
    cairn.files.add(acme.id, guidelines, description="Acme Inc brand guidelines: logo usage, "
                    "palette, typography")
    brief = root / "q3-launch-brief.md"
    brief.write_text("# Q3 launch brief\n" + "Timeline, channels, success metrics.\n" * 80)
    cairn.files.add(acme.id, brief, description="Q3 2026 launch brief — timeline, channels, "
                    "success metrics")
    cairn.settings.set("knowledge.idle_seconds", 86_400)  # no rebuild while shooting
    # The conversation was learned a few minutes ago (as a rebuild records it).
    with reg.db.write() as conn:
        for learnt in (learned, release.id, bake.id):
            conn.execute("UPDATE chat SET knowledge_watermark = (SELECT max(id) FROM message"
                         " WHERE chat_id = ?) WHERE id = ?", (learnt, learnt))
        conn.execute("INSERT INTO knowledge_status (owner, last_success) VALUES (?, ?)",
                     (acme.id, "2026-11-30T09:12:00.000Z"))
    cairn.knowledge.save(brand.id, "## Assets & links\n- Logo files in Brand/logo/\n",
                         source="user")
    add_mcp(cairn, root, web.id)
    (root / "Thesis").rename(root / "Thesis (moved)")  # shows as missing
    reg.refresh_status()
    cairn.close()


async def settle(seconds: float) -> None:
    """Let the window lay out and settle (the renders are not tests: a pause will do)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        await asyncio.sleep(0.05)


async def open_chat(window, chat_id: str) -> None:
    """Select the chat and wait until it is open with its saved draft: text set before that
    is kept after the draft (a person's typing is never lost), so it would show twice."""
    window.select_chat(chat_id)
    deadline = time.monotonic() + 10
    while window.chat_panel._draft_for != chat_id and time.monotonic() < deadline:
        await asyncio.sleep(0.02)


def main() -> None:
    import keyring

    from tests.memory_keyring import MemoryKeyring

    keyring.set_keyring(MemoryKeyring())  # as on a desktop with a keychain, never the real one
    keyring.set_password("Cairn", "anthropic-api-key", "sk-ant-screenshot-0000")
    root = Path(tempfile.mkdtemp(prefix="cairn-shots-"))
    os.environ["CAIRN_DATA_DIR"] = str(root / "data")
    os.environ["CAIRN_FIRST_USE_DIR"] = str(root / "Documents" / "Cairn")
    make_data(root)

    import qasync
    from PySide6.QtWidgets import QApplication

    from ui.app import start

    app = QApplication([])
    OUT.mkdir(parents=True, exist_ok=True)
    for scheme in ("light", "dark"):
        loop = qasync.QEventLoop(app)
        asyncio.set_event_loop(loop)
        starter = start(app, Path(os.environ["CAIRN_DATA_DIR"]), dark=scheme == "dark")
        window = starter.window
        window.resize(1180, 900)

        async def shoot() -> None:
            starter.begin()
            while starter.ops is None or window.chat_panel is None or window.knowledge is None:
                await asyncio.sleep(0.02)
            reg = starter.cairn.registry
            acme = next(w for w in reg.top_level() if w.title == "Acme Inc")
            brand = next(w for w in reg.children(acme.id) if w.title == "Brand")
            window.sidebar.set_expanded_ids([acme.id, brand.id])
            launch = next(c for c in reg.chats_of(brand.id) if c.title == "Launch copy")
            await open_chat(window, launch.id)
            window.chat_panel.composer.set_text("Now a shorter version for the social posts")
            window.split.setSizes([260, 570, 350])
            box = window.knowledge.owner_box  # the project's document beside the folder chat
            box.setCurrentIndex(box.findData(acme.id))
            window.knowledge._owner_chosen()
            deadline = time.monotonic() + 3
            while time.monotonic() < deadline:  # let it lay out and settle
                await asyncio.sleep(0.05)
            window.grab().save(str(OUT / f"window-{scheme}.png"))
            # A reply that searched the web, with its sources and citations.
            website = next(w for w in reg.children(acme.id) if w.title == "Website")
            release = next(c for c in reg.chats_of(website.id) if c.title == "PySide6 release")
            window.sidebar.set_expanded_ids([acme.id, website.id])
            await open_chat(window, release.id)
            window.chat_panel.composer.set_text("")
            await settle(1.5)
            window.grab().save(str(OUT / f"web-{scheme}.png"))
            window.sidebar.set_expanded_ids([acme.id, brand.id])
            await open_chat(window, launch.id)
            window.chat_panel.composer.set_text("Now a shorter version for the social posts")
            # The knowledge panel on the project's document, then its history's diff.
            window.select_workspace(acme.id)
            window.split.setSizes([250, 480, 450])
            panel = window.knowledge
            deadline = time.monotonic() + 1.5
            while time.monotonic() < deadline:
                await asyncio.sleep(0.05)
            panel.editor.edit.verticalScrollBar().setValue(0)
            panel.grab().save(str(OUT / f"knowledge-{scheme}.png"))
            panel.editor.show_history()
            history = panel.editor.history
            history.list.setCurrentRow(0)
            history.side_by_side.setChecked(False)
            deadline = time.monotonic() + 1.5
            while time.monotonic() < deadline:
                await asyncio.sleep(0.05)
            panel.grab().save(str(OUT / f"history-{scheme}.png"))
            panel.editor.show_document()
            # A narrow window: the chat keeps its room, the knowledge panel folds itself.
            geometry = window.size()
            await open_chat(window, launch.id)
            window.resize(860, 640)
            await settle(1.5)
            window.grab().save(str(OUT / f"window-narrow-{scheme}.png"))
            # The sidebar's filter in use.
            window.resize(geometry)
            await settle(0.5)
            window.sidebar.set_filter("launch")
            await settle(1.0)
            window.grab().save(str(OUT / f"window-filter-{scheme}.png"))
            window.sidebar.set_filter("")
            # The Search box (Ctrl+K): titles first, then what the index finds.
            window.open_search()
            answered: list[str] = []
            window.search_box.sig_answered.connect(answered.append)
            window.search_box.field.setText("launch")
            deadline = time.monotonic() + 10
            while "launch" not in answered and time.monotonic() < deadline:
                await asyncio.sleep(0.05)
            await settle(0.5)
            window.grab().save(str(OUT / f"search-{scheme}.png"))
            window.search_box.close_box()
            starter.show_board()
            board = starter._board
            board.resize(1000, 520)
            await asyncio.sleep(0.5)
            board.grab().save(str(OUT / f"board-{scheme}.png"))
            board.close()
            # Versions: a reply with three versions, the second shown.
            recipes = next(w for w in reg.top_level() if w.title == "Recipes")
            bake = next(c for c in reg.chats_of(recipes.id) if c.title == "Saturday bake plan")
            window.sidebar.set_expanded_ids([recipes.id])
            await open_chat(window, bake.id)
            window.chat_panel.composer.set_text("")
            window.split.setSizes([250, 600, 330])
            await settle(1.5)
            window.grab().save(str(OUT / f"versions-{scheme}.png"))
            from ui.settings import SettingsDialog

            dialog = SettingsDialog(starter.ops, registry=starter.cairn.registry,
                                    settings=starter.cairn.settings,
                                    catalog=starter.cairn.catalog)
            dialog.resize(640, 720)
            dialog.show()
            await asyncio.sleep(0.8)
            dialog.grab().save(str(OUT / f"settings-{scheme}.png"))
            # Settings → Tools: the MCP servers, what each runs, where it is on.
            dialog._tabs.setCurrentWidget(dialog.tools_page)
            await settle(0.8)
            dialog.grab().save(str(OUT / f"settings-tools-{scheme}.png"))
            dialog.close()
            # The workspace's Tools page, git's tools shown (it starts: a real server).
            website = next(w for w in reg.children(acme.id) if w.title == "Website")
            window.sidebar.set_expanded_ids([acme.id, website.id])
            shipped = next(c for c in reg.chats_of(website.id)
                           if c.title == "What shipped this week")
            await open_chat(window, shipped.id)
            window.resize(1180, 900)
            window.split.setSizes([250, 520, 410])
            panel = window.knowledge
            panel.tabs.setCurrentWidget(panel.tools)
            await settle(0.8)
            panel.tools.show_tools("git")
            deadline = time.monotonic() + 30
            while "git" not in panel.tools.listed and time.monotonic() < deadline:
                await asyncio.sleep(0.05)
            await settle(0.8)
            panel.grab().save(str(OUT / f"tools-{scheme}.png"))
            # The call's line unfolded: its arguments and result, plain text.
            entry = window.chat_panel.view.conversation.entries[-1]
            for n in entry.calls():
                window.chat_panel._anchor(entry, f"cairn:call/{n}", None)
            await settle(1.0)
            window.chat_panel.grab().save(str(OUT / f"call-{scheme}.png"))
            panel.tabs.setCurrentWidget(panel.editor)
            # File → Import from Claude.ai or ChatGPT…: what the export holds, then the report.
            from tests.history_exports import write_claude_export

            export = write_claude_export(root / f"claude-export-{scheme}.zip")
            window.import_history()
            importer = window.history_dialog
            importer.resize(640, 440)
            importer.open_source(str(export))
            while importer.pages.currentIndex() != 1:
                await asyncio.sleep(0.05)
            await settle(0.5)
            importer.grab().save(str(OUT / f"history-import-{scheme}.png"))
            importer.start()
            while importer.pages.currentIndex() != 3:
                await asyncio.sleep(0.05)
            await settle(0.5)
            importer.grab().save(str(OUT / f"history-report-{scheme}.png"))
            importer.accept()

        with loop:
            loop.run_until_complete(shoot())
            window.close()
            loop.run_until_complete(starter.finish())
    for path in sorted(OUT.glob("*.png")):
        print(path)


if __name__ == "__main__":
    main()
