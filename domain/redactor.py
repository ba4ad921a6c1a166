"""Secrets a tool or its server echoes, redacted before anything records or prints them.

A :class:`Redactor` holds the values the harness was configured with (API keys, the model key,
the database password, what it hands MCP servers with ``env_from`` / ``headers_from_env``, the
OTLP headers) and replaces every occurrence of each with :data:`MARK`; it also replaces
credentials by their shape: ``Bearer …``, ``Basic …`` (when it decodes to ``user:password``),
``user:password@`` in a URL, a URL query value whose name says key, token, secret, password or
credential, and ``password=…``, ``token=…``, ``"api_key": "…"`` pairs. It counts what it
replaced: the count is recorded, never the value.

A value shorter than :data:`MIN_SECRET_CHARS` is not looked for literally: ``prod``, ``true`` or
``eu-west`` handed to a server would shred ordinary text wherever they occur. Such a value is
still hidden where its shape says it is a credential. The text tools return is evidence, so
the shapes are narrower than a failure cause's (:mod:`domain.redaction`): ``cache_key=a1`` or
``author=ann`` in a log line is kept; only a URL's query is read by the broader names.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import parse_qsl, quote, urlsplit, urlunsplit

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

MARK = "[redacted]"
"""What replaces a secret: the model sees it, cites it and the log keeps it, in its place."""

MIN_SECRET_CHARS = 8
"""Configured values shorter than this are not redacted literally (see the module's text)."""

_NOT_MARKED = rf"(?![\"']?{re.escape(MARK)})"
"""Not a value already redacted (a second pass finds nothing, so counts are not doubled)."""
# Every repetition before a fixed word is bounded, and a name is matched by its last word (what
# precedes it is kept as it is): a hostile server's text cannot make a pattern take quadratic time.
_QUERY_NAME = r"[\w.-]{0,64}?(?:key|token|secret|passw(?:or)?d|pwd|credential|signature|auth)"
_PAIR_WORD = r"(?:password|passwd|pwd|secret|token|api[_-]?key|access[_-]?key)"
_CREDENTIAL_KEY = re.compile(rf"(?i)[\w.-]*{_PAIR_WORD}|authorization")
_SCHEMES = re.compile(r"(?i)^(bearer|basic|token)\s+(\S+)$")

_URL_USERINFO = re.compile(
    rf"(?<=://)[^/\s@:\"'<>]{{0,256}}:(?!{re.escape(MARK)}@)[^/\s@\"'<>]{{0,256}}@"
)
_QUERY_VALUE = re.compile(rf"(?i)([?&]{_QUERY_NAME}[\w.-]{{0,64}}=){_NOT_MARKED}[^&#\s\"'<>]+")
_VALUE = r"(?:\"[^\"\n]{0,4096}\"|'[^'\n]{0,4096}'|[^\s&\"',;)}\]]+)"
"""A value: quoted (spaces and all), else up to a separator."""
_PAIR = re.compile(rf"(?i)({_PAIR_WORD}[ \t]{{0,8}}=[ \t]{{0,8}}){_NOT_MARKED}{_VALUE}")
_JSON_PAIR = re.compile(
    rf"(?i)({_PAIR_WORD}[\"'][ \t]{{0,8}}:[ \t]{{0,8}}){_NOT_MARKED}\"[^\"\n]{{0,4096}}\""
)
_BEARER = re.compile(rf"(?i)\b(bearer)[ \t]{{1,8}}{_NOT_MARKED}[\w.~+/=-]{{8,}}")
_BASIC = re.compile(r"(?i)\b(basic)[ \t]{1,8}([A-Za-z0-9+/]{6,2048}={0,2})(?![\w+/=])")


def _basic(found: re.Match[str]) -> str | None:
    """``Basic [redacted]`` when the credential decodes to ``user:password``; else None."""
    try:
        decoded = base64.b64decode(found[2], validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return None
    return f"{found[1]} {MARK}" if ":" in decoded else None


@dataclass(frozen=True)
class _Shape:
    """A credential's shape, what replaces a match (None: kept), and words it cannot lack."""

    pattern: re.Pattern[str]
    replace: Callable[[re.Match[str]], str | None]
    needles: tuple[str, ...]
    """Case-folded words every match holds one of: text holding none is not searched (a
    case-insensitive search of every position cost 0.25 ms for 4 KB; finding a word, 1 µs)."""

    def absent(self, folded: str) -> bool:
        """Whether text whose :func:`_folded` form is ``folded`` surely holds no match."""
        return not any(needle in folded for needle in self.needles)


def _folded(text: str) -> str:
    """``text`` case-folded as ``(?i)`` matches it.

    ``ſ`` and the Kelvin sign fold to ``s`` and ``k``; the dotless ``ı``, which ``(?i)i``
    matches too, becomes ``i``.
    """
    return text.casefold().replace("\u0131", "i")


_WORDS = ("pass", "pwd", "secret", "token", "key")
"""What each of :data:`_PAIR_WORD`'s words holds."""
_SHAPES: tuple[_Shape, ...] = (
    _Shape(_URL_USERINFO, lambda m: f"{MARK}@", ("://",)),
    _Shape(_QUERY_VALUE, lambda m: f"{m[1]}{MARK}", (*_WORDS, "credential", "signature", "auth")),
    _Shape(_PAIR, lambda m: f"{m[1]}{MARK}", _WORDS),
    _Shape(_JSON_PAIR, lambda m: f'{m[1]}"{MARK}"', _WORDS),
    _Shape(_BEARER, lambda m: f"{m[1]} {MARK}", ("bearer",)),
    _Shape(_BASIC, _basic, ("basic",)),
)
"""In the order applied. A replacement puts :data:`MARK` (no needle in it) where a match was,
so it never makes a needle of the text on either side."""


@dataclass(frozen=True)
class Redacted:
    """Text with its secrets replaced, and how many were."""

    text: str
    count: int = 0


@dataclass(frozen=True)
class Redactor:
    """The known secrets (longest first) and the credential shapes; :meth:`of` builds one."""

    secrets: tuple[str, ...] = ()

    @classmethod
    def of(cls, values: Iterable[str]) -> Redactor:
        """A redactor of ``values``: each as written, URL-encoded and JSON-escaped.

        A header value such as ``Bearer abc…`` or ``Basic dXNl…`` is a secret whole and so is
        its credential (and a Basic one's decoded ``user:password`` and password). Values
        shorter than :data:`MIN_SECRET_CHARS` are left out.
        """
        found: set[str] = set()
        for value in values:
            for part in _parts(value):
                found |= {part, quote(part, safe=""), json.dumps(part)[1:-1]}
                found.add(json.dumps(part, ensure_ascii=False)[1:-1])
        kept = (s for s in found if len(s) >= MIN_SECRET_CHARS)
        return cls(tuple(sorted(kept, key=lambda s: (-len(s), s))))

    def redact(self, text: str) -> Redacted:
        """``text`` with every known secret and every credential shape replaced by MARK."""
        count = 0
        for secret in self.secrets:
            if secret in text:
                count += text.count(secret)
                text = text.replace(secret, MARK)
        folded = _folded(text)
        for shape in _SHAPES:
            if not shape.absent(folded):
                text, found = _substitute(shape.pattern, shape.replace, text)
                count += found
        return Redacted(text, count)

    def hide_known(self, text: str) -> str:
        """``text`` with the known secrets replaced (not the shapes: a caller has its own)."""
        for secret in self.secrets:
            text = text.replace(secret, MARK)
        return text

    def joined(self, other: Redactor) -> Redactor:
        """A redactor of the secrets of both."""
        both = set(self.secrets) | set(other.secrets)
        return Redactor(tuple(sorted(both, key=lambda s: (-len(s), s))))

    def hide(self, text: str) -> str:
        """Only the redacted text (where no count is kept: a diagnostics line, a message)."""
        return self.redact(text).text

    def json(self, value: object) -> tuple[object, int]:
        """A JSON value with each string redacted, and each credential-named key's text value.

        The strings are redacted one by one, never the JSON text: a replacement inside an
        escape would break it.
        """
        if isinstance(value, str):
            done = self.redact(value)
            return done.text, done.count
        if isinstance(value, list):
            items = [self.json(item) for item in value]
            return [item for item, _ in items], sum(count for _, count in items)
        if isinstance(value, dict):
            found: dict[object, object] = {}
            count = 0
            for key, item in value.items():
                if isinstance(item, str) and item != MARK and _CREDENTIAL_KEY.fullmatch(str(key)):
                    found[key], count = MARK, count + 1
                    continue
                found[key], more = self.json(item)
                count += more
            return found, count
        return value, 0

    def lines(self, lines: Iterable[str]) -> tuple[tuple[str, ...], int]:
        """Each line redacted, and the count over all of them.

        The same as redacting each line on its own, but a secret or shape found nowhere in the
        lines joined by newlines is not looked for line by line (what a tool returns usually
        holds none). Exact: no shape spans a newline, and each one's edges judge a newline as
        they judge a line's end.
        """
        done = list(lines)
        count = 0
        for secret in self.secrets:
            if any(secret in line for line in done):
                count += sum(line.count(secret) for line in done)
                done = [line.replace(secret, MARK) for line in done]
        joined = "\n".join(done)
        folded = _folded(joined)
        for shape in _SHAPES:
            if shape.absent(folded) or shape.pattern.search(joined) is None:
                continue
            found = [_substitute(shape.pattern, shape.replace, line) for line in done]
            done = [line for line, _ in found]
            count += sum(n for _, n in found)
            joined = "\n".join(done)
        return tuple(done), count


def _substitute(
    pattern: re.Pattern[str], replace: Callable[[re.Match[str]], str | None], text: str
) -> tuple[str, int]:
    count = 0

    def one(found: re.Match[str]) -> str:
        nonlocal count
        made = replace(found)
        if made is None:
            return found[0]
        count += 1
        return made

    return pattern.sub(one, text), count


def _parts(value: str) -> list[str]:
    """The value and, when it is an Authorization value, its credential (decoded too)."""
    parts = [value, value.strip()]
    scheme = _SCHEMES.match(value.strip())
    if scheme is None:
        return parts
    credential = scheme[2]
    parts.append(credential)
    if scheme[1].lower() == "basic":
        try:
            decoded = base64.b64decode(credential, validate=True).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError, ValueError):
            return parts
        parts += [decoded, decoded.partition(":")[2]]
    return parts


def url_secrets(url: str) -> list[str]:
    """What a configured URL carries that is secret: password, token, credential query values.

    The password; a token in the user name's place; the values of credential-named query
    parameters (``?api_key=…``). A user name is a token only on an ``http(s)`` URL with no password (``https://TOKEN@host``);
    a database's user name (``postgres``), ``sslmode=verify-full`` or ``api-version=2024-06-01``
    are not secrets, and redacting them would blank those words in every record quoting them.
    """
    try:
        parts = urlsplit(url.strip())
        token = parts.scheme in ("http", "https") and parts.password is None
        found = [parts.password or (parts.username if token else None) or ""]
    except ValueError:  # not a URL (an invalid port, a broken IPv6 host): nothing to read
        return []
    named = re.compile(rf"(?i){_QUERY_NAME}[\w.-]{{0,64}}")
    found += [v for k, v in parse_qsl(parts.query, keep_blank_values=True) if named.fullmatch(k)]
    return [value for value in found if value]


def shown_url(url: str, mark: str = MARK) -> str:
    """``url`` as a message may show it: no ``user:password@``, every query value hidden."""
    text = url.strip()
    try:
        parts = urlsplit(text)
        bare = not parts.netloc  # no scheme:// (a mistake): read it as [user:password@]host…
        parts = urlsplit(f"//{text}") if bare else parts
        query = "&".join(f"{name}={mark}" for name, _ in parse_qsl(parts.query, True))
        netloc = parts.netloc.rpartition("@")[2]
        shown = urlunsplit(parts._replace(netloc=netloc, query=query, fragment=""))
        return shown.removeprefix("//") if bare else shown
    except ValueError:
        return NO_SECRETS_BUT_SHAPES.redact(url).text


NO_SECRETS_BUT_SHAPES = Redactor()
"""A redactor of the credential shapes alone."""
