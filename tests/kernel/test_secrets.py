"""`read_secret`: a credential leaves the environment when dsh reads it; `redact_secrets`."""

from __future__ import annotations

import os

import pytest

from dsh.kernel import HELD, read_secret, redact_secrets

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
