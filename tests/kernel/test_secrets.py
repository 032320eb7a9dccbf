"""`read_secret`: a credential leaves the environment when dsh reads it; `redact_secrets`."""

from __future__ import annotations

import json
import os

import pytest

from dsh.kernel import HELD, json_holds_secrets, read_secret, redact_secrets

NAME = "DSH_TEST_SECRET_KEY"
VALUE = "sk-test-abcdefghijklmnop"


def test_a_read_takes_the_credential_out_of_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(NAME, VALUE)
    assert read_secret(NAME) == VALUE
    assert os.environ[NAME] == HELD  # children inherit no credential
    assert read_secret(NAME) == VALUE  # held
    assert redact_secrets(f"key={VALUE}!") == f"key=[redacted {NAME}]!"
    monkeypatch.setenv(NAME, "sk-rotated-0123456789")
    assert read_secret(NAME) == "sk-rotated-0123456789"  # a new value is taken too
    monkeypatch.delenv(NAME)
    assert read_secret(NAME) is None  # removed: forgotten
    assert redact_secrets(f"key={VALUE}") == f"key={VALUE}"


def test_what_is_no_credential(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(NAME, "")
    assert read_secret(NAME) is None
    monkeypatch.setenv(NAME, HELD)  # inherited from a dsh that held it
    assert read_secret(NAME) is None
    monkeypatch.setenv(NAME, "short")
    assert read_secret(NAME) == "short"
    assert redact_secrets("a short word") == "a short word"  # too short to mask
    monkeypatch.delenv(NAME)
    read_secret(NAME)


@pytest.mark.parametrize(
    "value", [VALUE, 'sk-"quoted"\\slash', "sk-line\nbreak\ttab", "sk-ünïcödé-kéy"]
)
def test_a_json_text_holds_a_credential_when_one_of_its_strings_does(
    value: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(NAME, value)
    assert read_secret(NAME) == value
    try:
        holding = {"lines": [{"text": f"before {value} after"}], "n": 1}
        assert json_holds_secrets(json.dumps(holding, ensure_ascii=False))
        assert json_holds_secrets(json.dumps({value: 1}, ensure_ascii=False))  # a key too
        assert not json_holds_secrets(json.dumps({"lines": ["nothing"]}, ensure_ascii=False))
    finally:
        monkeypatch.delenv(NAME)
        read_secret(NAME)
