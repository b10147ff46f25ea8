"""redact_prompt and detect_sensitive (spec 000 §21.2–21.3)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kernel.llm.redaction import detect_sensitive, redact_prompt

SECRETS = [
    (
        "use key sk-proj-AbCdEf0123456789AbCdEf0123 for the call",
        "sk-proj-AbCdEf0123456789AbCdEf0123",
    ),
    ("Authorization: Bearer abcDEF123456.ghiJKL-789", "abcDEF123456.ghiJKL-789"),
    ("Authorization: Basic dXNlcjpwYXNzd29yZA==", "dXNlcjpwYXNzd29yZA=="),
    ("login with password=hunter2!! please", "hunter2!!"),
    ('config {"password": "s3cr3t"} broken', "s3cr3t"),
    ("db is postgres://admin:Pa55w0rd@db.internal:5432/app", "Pa55w0rd"),
    (
        "token eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_X here",
        "eyJzdWIiOiIxMjM0NTY3ODkwIn0",
    ),
    ("Cookie: sessionid=abc123; csrftoken=xyz789", "abc123"),
    ("set session_token=QWERTY123456 in the header", "QWERTY123456"),
    ("api_key: 'ZXhhbXBsZS1rZXk'", "ZXhhbXBsZS1rZXk"),
    ("AWS AKIAIOSFODNN7EXAMPLE in env", "AKIAIOSFODNN7EXAMPLE"),
    (
        "gh token ghp_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789",
        "ghp_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789",
    ),
    ("client_secret = 9f8e7d6c5b4a", "9f8e7d6c5b4a"),
]


@pytest.mark.parametrize(("text", "secret"), SECRETS)
def test_secrets_are_redacted(text: str, secret: str) -> None:
    result = redact_prompt(text)
    assert secret not in result.text
    assert "REDACTED" in result.text
    assert result.counts


def test_a_private_key_block_is_removed_whole() -> None:
    block = "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7\nabc\n-----END RSA PRIVATE KEY-----"
    result = redact_prompt(f"why does this fail?\n{block}\nthanks")
    assert "MIIEow" not in result.text
    assert result.text == "why does this fail?\n[REDACTED:private-key]\nthanks"


def test_long_base64_payloads_are_removed() -> None:
    payload = "QUJD" * 80
    assert payload not in redact_prompt(f"decode {payload} now").text


def test_home_paths_become_tilde() -> None:
    text = "open /home/alice/projects/app/main.py and C:\\Users\\bob\\repo\\x.cs and /Users/carol/x"
    result = redact_prompt(text)
    assert "alice" not in result.text and "bob" not in result.text and "carol" not in result.text
    assert "~/projects/app/main.py" in result.text
    assert redact_prompt("see /srv/data/home.txt").text == "see /srv/data/home.txt"
    assert redact_prompt("in /opt/me/work", home="/opt/me").text == "in ~/work"
    assert "alice" in redact_prompt(text, home_paths=False).text


def test_text_is_bounded_after_redaction() -> None:
    result = redact_prompt("a" * 100, max_chars=10)
    assert (result.text, result.truncated) == ("a" * 10, True)


def test_ordinary_routing_prompts_are_untouched() -> None:
    for text in (
        "Verifica il diff rispetto ai requisiti e segnala regressioni.",
        "Review the token counting logic and the basic authentication flow",
        "write a password reset page in ColdFusion",
        "the bearer of bad news",
    ):
        assert redact_prompt(text).text == text


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("-----BEGIN PRIVATE KEY-----\nabc", "private-key"),
        ("curl -H 'Authorization: Bearer x'", "bearer-authorization"),
        ("password=abc", "password-assignment"),
        ("api_key=abc", "api-key-assignment"),
        ("client_secret: abc", "client-secret"),
        ("mysql://root:toor@localhost/db", "credentialed-connection-string"),
        ("A" * 300, "long-base64"),
    ],
)
def test_high_risk_prompts_are_detected(text: str, kind: str) -> None:
    assert kind in detect_sensitive(text)


def test_ordinary_prompts_are_not_sensitive() -> None:
    assert detect_sensitive("Rivedi la pagina di login e il reset della password") == ()
    assert detect_sensitive("fix the api key rotation docs") == ()


@given(st.text(max_size=300))
def test_redaction_is_idempotent_and_never_grows_past_the_bound(text: str) -> None:
    once = redact_prompt(text, max_chars=200)
    assert len(once.text) <= 200
    assert redact_prompt(once.text, max_chars=200).text == once.text
