"""Known secrets and credential shapes are redacted from what tools say, and counted."""

from __future__ import annotations

import base64

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from application.ports import ToolExecutionError, ToolOutput
from application.tool_secrets import redacted_error, redacted_output
from domain.redactor import (
    _SHAPES,
    MARK,
    MIN_SECRET_CHARS,
    Redactor,
    _substitute,
    shown_url,
    url_secrets,
)

KEY = "hk-7Qz2-never-print-me"
TOKEN = "tok-ABCDEFGH1234"
PASSWORD = "pw-hunter-2222"
BASIC = base64.b64encode(f"svc:{PASSWORD}".encode()).decode()
NO_SECRETS = Redactor()
REDACTOR = Redactor.of([KEY, f"Bearer {TOKEN}", f"Basic {BASIC}", "prod", "eu-west"])


@pytest.mark.parametrize(
    ("text", "expected", "count"),
    [
        (f"auth failed for {KEY}", f"auth failed for {MARK}", 1),
        (f"{KEY}/{KEY}", f"{MARK}/{MARK}", 2),
        (f"sent {TOKEN} alone", f"sent {MARK} alone", 1),  # a header value's credential
        (f"user svc password {PASSWORD}", f"user svc password {MARK}", 1),  # Basic, decoded
        (f'{{"k": "{KEY}"}}', f'{{"k": "{MARK}"}}', 1),
        ("GET /x?api_key=abc123&q=1", f"GET /x?api_key={MARK}&q=1", 1),
        ("https://bob:s3cr3t@db:5432/x", f"https://{MARK}@db:5432/x", 1),
        ("Authorization: Bearer eyJhbGciOi.x-y", f"Authorization: Bearer {MARK}", 1),
        (
            f"Authorization: Basic {base64.b64encode(b'ann:pa55').decode()}",
            f"Authorization: Basic {MARK}",
            1,
        ),
        ('db_password="p w" user=bob', f"db_password={MARK} user=bob", 1),
        ('{"api_key": "zz", "cache_key": "a"}', f'{{"api_key": "{MARK}", "cache_key": "a"}}', 1),
    ],
)
def test_secrets_and_credential_shapes_are_replaced_and_counted(
    text: str, expected: str, count: int
) -> None:
    done = REDACTOR.redact(text)
    assert (done.text, done.count) == (expected, count)


@pytest.mark.parametrize(
    "text",
    [
        "checkout in prod eu-west ERROR upstream timeout",  # short configured values: kept
        "Basic healthcheck passed",  # not base64 of user:password
        "the bearer of bad news",
        "cache_key=checkout:1 author=ann tokens_used=5",  # evidence, not credentials
        "https://example.com/status?service=checkout",
        "ssh://git@github.com/x",  # a user name alone, no password
    ],
)
def test_ordinary_evidence_is_left_whole(text: str) -> None:
    assert REDACTOR.redact(text).text == text and REDACTOR.redact(text).count == 0


def test_a_secret_is_found_url_encoded_and_json_escaped_too() -> None:
    redactor = Redactor.of(['p@ss "word"+12'])
    assert redactor.redact("q=p%40ss%20%22word%22%2B12&r=1").text == f"q={MARK}&r=1"
    assert redactor.redact('{"v": "p@ss \\"word\\"+12"}').text == f'{{"v": "{MARK}"}}'


def test_short_values_are_never_secrets_to_look_for() -> None:
    assert all(len(secret) >= MIN_SECRET_CHARS for secret in REDACTOR.secrets)
    assert "prod" not in REDACTOR.secrets and Redactor.of(["1234567"]).secrets == ()


def test_a_secret_that_contains_another_is_hidden_whole() -> None:
    redactor = Redactor.of(["abcdefgh", "abcdefgh-ijkl"])
    assert redactor.redact("x abcdefgh-ijkl y").text == f"x {MARK} y"


@given(st.text(max_size=80), st.sampled_from([KEY, TOKEN, PASSWORD, BASIC]))
def test_a_known_secret_never_survives_and_a_second_pass_finds_nothing(
    around: str, secret: str
) -> None:
    once = REDACTOR.redact(f"{around}{secret}{around}")
    assert secret not in once.text and once.count >= 1
    assert REDACTOR.redact(once.text).count == 0


def test_structured_content_is_redacted_value_by_value() -> None:
    value, count = REDACTOR.json({"rows": [f"x {KEY}"], "password": "short", "n": 3})
    assert (value, count) == ({"rows": [f"x {MARK}"], "password": MARK, "n": 3}, 2)


def test_a_tools_output_and_error_are_redacted_with_the_count_added() -> None:
    output = ToolOutput((f"a {KEY}", "b"), f"scope {KEY}", (f"note {TOKEN}",), redactions=2)
    done = redacted_output(REDACTOR, output)
    assert done == ToolOutput((f"a {MARK}", "b"), f"scope {MARK}", (f"note {MARK}",), 5)
    error = redacted_error(REDACTOR, ToolExecutionError("EXECUTION", f"no {KEY}", 1))
    assert (error.code, str(error), error.redactions) == ("EXECUTION", f"no {MARK}", 2)
    clean = ToolOutput(("ok",), "scope")
    assert redacted_output(REDACTOR, clean) is clean


def test_a_url_shows_no_credentials_and_gives_them_up_as_secrets() -> None:
    url = f"https://bob:{PASSWORD}@otel:4318/v1/traces?token={KEY}&x=1"
    assert shown_url(url) == f"https://otel:4318/v1/traces?token={MARK}&x={MARK}"
    assert url_secrets(url) == [PASSWORD, KEY]
    assert url_secrets("https://[broken") == []
    assert url_secrets(f"https://{KEY}@mcp.example/mcp") == [KEY]  # a token in the user's place


def test_a_urls_ordinary_words_are_not_secrets_that_would_blank_the_evidence() -> None:
    database = "postgresql://postgres@db/harness?sslmode=verify-full&application_name=worker"
    assert url_secrets(database) == []
    assert url_secrets("https://llm.example/v1?api-version=2024-06-01") == []
    redactor = Redactor.of(url_secrets(database))
    said = "ERROR payments: postgres connection pool exhausted; verify-full handshake failed"
    assert redactor.redact(said).text == said
    assert KEY not in shown_url(f"localhost:4318?token={KEY}")


@pytest.mark.parametrize(
    "unit", ["a.", "?a", '"', "a:", "http://a:b", 'password="', '"token": "', "?key", "bearer "]
)
def test_a_hostile_text_is_redacted_in_one_pass_not_quadratic_time(unit: str) -> None:
    """Patterns bound every repetition before a fixed word: 200,000 units finish (a quadratic
    pattern would take hours on them)."""
    text = unit * 200_000
    assert REDACTOR.redact(text + KEY).text.endswith(MARK)


_PIECES = st.sampled_from(
    [KEY, TOKEN, PASSWORD, BASIC, "Bearer ", "Basic ", "password=", '"api_key": "', "https://"]
    + ["u:p@", "?token=", "&", " ", "\t", "\n", '"', "'", MARK, "x", "=", ":", "@", "/"]
)


@given(st.lists(st.lists(_PIECES, max_size=12).map("".join), max_size=6))
@example(["x", "Bearer abcdefghij"])  # a line's start is a word's start
@example(["see https://", "u:p@host"])  # a URL's parts on two lines are no credential
def test_lines_are_redacted_as_each_line_alone_would_be(lines: list[str]) -> None:
    alone = [REDACTOR.redact(line) for line in lines]
    assert REDACTOR.lines(lines) == (tuple(a.text for a in alone), sum(a.count for a in alone))


def _every_shape(text: str) -> tuple[str, int]:
    """Each credential shape searched for unconditionally, as before any word was looked for."""
    count = 0
    for shape in _SHAPES:
        text, found = _substitute(shape.pattern, shape.replace, text)
        count += found
    return text, count


_LOOKALIKES = st.sampled_from(
    [
        "paſsword=hunter22",
        "ſecret='abc def'",
        "api_\u212aey=abcdef",
        "basıc c3ZjOmh1bnRlcjI=",
        "BEARER",
    ]
    + [" abcdefghijk", "tok\u0130n=x1", "https://ſvc:pw@h", "?AUTH=zz&", '"Api-Key": "v"', "\n"]
)


@given(st.lists(st.one_of(_PIECES, _LOOKALIKES), max_size=12).map("".join))
@example("paſsword=hunter22")  # (?i) matches ſ as s: the word is looked for case-folded
@example("basıc c3ZjOmh1bnRlcjI=")  # and the dotless ı as i
def test_a_shape_is_searched_wherever_it_could_match(text: str) -> None:
    assert (NO_SECRETS.redact(text).text, NO_SECRETS.redact(text).count) == _every_shape(text)
