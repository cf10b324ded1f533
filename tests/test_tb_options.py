"""tb.options: one parser for boolean environment options (SIM_FULL, WAVES, MX_FULL, ...)."""

from __future__ import annotations

import pytest

from tb.options import env_flag, env_int, parse_flag


@pytest.mark.parametrize("text", ["1", "true", "TRUE", "yes", "On", " on "])
def test_true_spellings(text):
    assert parse_flag("X", text) is True


@pytest.mark.parametrize("text", ["0", "false", "False", "no", "OFF"])
def test_false_spellings_are_false(text):
    # the old `bool(os.environ.get("SIM_FULL"))` turned SIM_FULL=0 on
    assert parse_flag("X", text, default=True) is False


@pytest.mark.parametrize("text", [None, "", "  "])
def test_unset_or_empty_is_the_default(text):
    assert parse_flag("X", text) is False
    assert parse_flag("X", text, default=True) is True


@pytest.mark.parametrize("text", ["2", "ture", "y", "enabled"])
def test_anything_else_is_an_error_naming_the_variable(text):
    with pytest.raises(ValueError, match=r"SIM_FULL="):
        parse_flag("SIM_FULL", text)


def test_env_flag_and_env_int_read_the_environment(monkeypatch):
    monkeypatch.setenv("MX_TEST_FLAG", "0")
    monkeypatch.setenv("MX_TEST_INT", "42")
    assert env_flag("MX_TEST_FLAG", default=True) is False
    assert env_int("MX_TEST_INT", 7) == 42
    monkeypatch.delenv("MX_TEST_INT")
    assert env_int("MX_TEST_INT", 7) == 7
    monkeypatch.setenv("MX_TEST_INT", "many")
    with pytest.raises(ValueError, match="MX_TEST_INT='many'"):
        env_int("MX_TEST_INT", 7)
