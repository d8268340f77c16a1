"""Code blocks whose fence names a language are coloured (Pygments), light
and dark, in the chat and the knowledge Preview; Pygments loads with the first such block."""

from __future__ import annotations

from tests.helpers import fresh_python
from tests.ui.helpers import wait_for
from ui.chat.markdown import Colours, render

CODE = "```python\ndef launch(day: str) -> None:\n    return None  # soon\n```\n"


def test_a_named_language_is_coloured_and_follows_the_theme():
    light = render(CODE, Colours()).html
    dark = render(CODE, Colours(code_background="#27272a", dark=True)).html
    assert '<span style="color: #' in light and "def</span>" in light
    assert light != dark  # the dark style's colours, not the light one's
    plain = render("```\ndef launch(): pass\n```\n", Colours()).html
    assert "<span style=\"color: #" not in plain.split("<pre", 1)[1]  # no language: plain
    unknown = render("```nosuchlanguage\nx = 1\n```\n", Colours()).html
    assert "x = 1" in unknown


def test_code_text_stays_text():
    hostile = render("```html\n<img src=//host/x.png>\n```\n", Colours()).html
    assert "<img" not in hostile and "&lt;" in hostile


def test_pygments_loads_with_the_first_coloured_block():
    said = fresh_python(
        "import sys\n"
        "from ui.chat.markdown import Colours, render\n"
        "render('No code here, only `inline`.', Colours())\n"
        "print('pygments' in sys.modules)\n"
        "render('```python\\nx = 1\\n```\\n', Colours())\n"
        "print('pygments' in sys.modules)\n")
    assert said.split() == ["False", "True"]


def test_the_knowledge_preview_colours_code(opened, folders):
    from tests.ui.drivers import show, workspace

    (acme,) = folders("Acme")
    ws_id = workspace(opened, acme)
    opened.cairn.knowledge.save(ws_id, "## Facts\n- A script:\n\n" + CODE, source="user")
    panel = show(opened, ws_id)
    editor = panel.editor
    editor.preview_toggle.click()
    wait_for(lambda: "def" in editor.preview.toPlainText())  # (built off the GUI thread)
    html = editor.preview.toHtml()
    # A keyword's colour in Pygments' light style (green) or its dark one (coral).
    assert "#008000" in html or "#ff7b72" in html
