"""Each setting is declared once (``app.store.settings.SETTINGS``) and that declaration is all
the store, ``cairn settings list/get/set`` and shell completion need: a setting declared in a
test and nowhere else is checked, stored, listed, read and completed."""

from __future__ import annotations

import json

import pytest

from app import cli
from app.store.settings import SETTINGS, Setting, reason_to_refuse
from tests.helpers import run


def test_every_declaration_is_whole_and_its_default_passes_its_own_check():
    for key, setting in SETTINGS.items():
        assert setting.key == key
        assert setting.label and setting.about.endswith((".", ".)")), key
        assert reason_to_refuse(key, setting.default) is None, key
        if setting.choices:
            assert setting.default in setting.values(), key
        if setting.range is not None:
            assert setting.range[0] <= setting.default <= setting.range[1], key
        if setting.page:  # the dialog names its field, and says it in a sentence
            assert setting.field and setting.said, key


def test_settings_list_says_each_setting_with_its_value_default_and_sentence(isolated, capsys):
    assert run(capsys, "settings", "set", "knowledge.idle_seconds", "90")[0] == 0
    code, out, err = run(capsys, "settings", "list", "--json")
    assert code == 0, err
    rows = {row["name"]: row for row in json.loads(out)}
    assert list(rows) == list(SETTINGS)
    idle = rows["knowledge.idle_seconds"]
    assert (idle["value"], idle["default"], idle["range"]) == (90, 20, [0, 86_400])
    assert idle["about"] == SETTINGS["knowledge.idle_seconds"].about
    assert rows["model.chat_effort"]["choices"][0] == ""
    code, out, _ = run(capsys, "settings", "list")
    assert "knowledge.idle_seconds = 90  (Knowledge idle delay; default 20)" in out


def test_settings_get_reads_one_and_refuses_an_unknown_name_in_a_sentence(isolated, capsys):
    assert run(capsys, "settings", "set", "memory.enabled", "off")[0] == 0
    code, out, _ = run(capsys, "settings", "get", "memory.enabled")
    assert (code, out.strip()) == (0, "false")
    code, out, err = run(capsys, "settings", "get", "memory.enable")
    assert code != 0 and out == ""
    assert err.startswith("cannot read setting 'memory.enable': there is no such setting "
                          "(there are model.chat, "), err


def test_completion_offers_the_declared_names_after_settings_set(isolated, capsys):
    assert cli.main(["completion", "bash"]) == 0
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if x.strip().startswith('"settings set")'))
    assert line.split('echo "')[1].split('"')[0].split() == list(SETTINGS)


@pytest.fixture
def declared(monkeypatch: pytest.MonkeyPatch) -> Setting:
    """A setting that exists only as this declaration."""
    setting = Setting("chat.wrap_columns", 80, "Wrap columns", "Where long lines wrap.",
                      range=(20, 400), unit="columns",
                      range_said="the width is from 20 to 400 columns")
    monkeypatch.setitem(SETTINGS, setting.key, setting)
    return setting


def test_a_setting_declared_once_is_checked_stored_listed_and_completed(
        isolated, capsys, declared):
    code, _out, err = run(capsys, "settings", "set", "chat.wrap_columns", "1000")
    assert code != 0
    assert err.startswith("cannot change setting 'Wrap columns': 1,000 columns is too long: "
                          "the width is from 20 to 400 columns"), err
    code, _out, err = run(capsys, "settings", "set", "chat.wrap_columns", "wide")
    assert err.startswith("cannot change setting 'Wrap columns': 'wide' is not a whole "
                          "number"), err
    assert run(capsys, "settings", "get", "chat.wrap_columns")[1].strip() == "80"
    assert run(capsys, "settings", "set", "chat.wrap_columns", "120")[0] == 0
    assert run(capsys, "settings", "get", "chat.wrap_columns")[1].strip() == "120"
    assert json.loads(run(capsys, "settings", "show", "--json")[1])["chat.wrap_columns"] == 120
    assert cli.main(["completion", "fish"]) == 0
    assert "chat.wrap_columns" in capsys.readouterr().out
