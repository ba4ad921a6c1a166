"""The shipped runbooks as a knowledge base, searched with full text on the store's own database.

Each runbook (``infrastructure/runbooks/*.md``) is cut into one passage per ``##`` section, with a
stable id ``<runbook>#<section>`` that answers cite. SQLite keeps the passages in an FTS5 table
ranked by bm25; PostgreSQL in a table with a generated ``tsvector`` column and a GIN index, ranked
by ``ts_rank_cd``. User text never reaches a query parser as syntax: it is split into words,
stop-words are dropped, and each word becomes a quoted FTS5 string or a bound ``plainto_tsquery``
parameter, OR-ed together.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, replace
from importlib import resources
from typing import TYPE_CHECKING

from sqlalchemy import text
from sqlalchemy.exc import OperationalError, ProgrammingError

from application.ports import Passage, StoreUnavailableError

if TYPE_CHECKING:
    from collections.abc import Sequence

    from sqlalchemy import Connection, Engine

TABLE = "knowledge_passage"
MAX_QUERY_CHARS = 2_000
"""Only the start of a very long query is read; the rest would not change the ranking much."""
MAX_TERMS = 32
HEADING_WEIGHT = 0.3
"""How much a heading that holds the question's words raises a passage (see :func:`ranked`)."""
MAX_TERM_CHARS = 64
_PG_LOCK_KEY = 0x6B6E6F77  # "know": serialises concurrent DDL/re-indexing across processes
_WORD = re.compile(r"[^\W_]+")  # letters and digits only: never a quote, operator or underscore
_SLUG = re.compile(r"[^a-z0-9]+")

STOP_WORDS = frozenset(
    """a about after again all am an and any are as at be been before being between both but by
    can could did do does doing during each few for from further had has have having he her here
    him his how i if in into is it its itself just me more most my no nor not now of off on once
    only or other our out over own same she should so some such than that the their them then
    there these they this those through to too under until up very was we were what when where
    which while who whom why will with would you your""".split()
)

_PG_DDL: tuple[str, ...] = (
    f"""CREATE TABLE IF NOT EXISTS {TABLE} (
        passage_id text PRIMARY KEY,
        title text NOT NULL,
        body text NOT NULL,
        search tsvector GENERATED ALWAYS AS (
            setweight(to_tsvector('english', title), 'A')
            || setweight(to_tsvector('english', body), 'B')
        ) STORED
    )""",
    f"CREATE INDEX IF NOT EXISTS {TABLE}_search ON {TABLE} USING GIN (search)",
)
_SQLITE_DDL: tuple[str, ...] = (
    f"""CREATE VIRTUAL TABLE IF NOT EXISTS {TABLE} USING fts5(
        passage_id UNINDEXED, title, body, tokenize = 'porter unicode61 remove_diacritics 2'
    )""",
)
# Title matches weigh four times body matches; bm25() is lower-is-better, so it is negated.
_SQLITE_SEARCH = f"""
    SELECT passage_id, title, body, -bm25({TABLE}, 0.0, 4.0, 1.0) AS score
    FROM {TABLE} WHERE {TABLE} MATCH :match
    ORDER BY score DESC, passage_id LIMIT :limit
"""
_PG_SEARCH = f"""
    SELECT passage_id, title, body, ts_rank_cd(search, q) AS score
    FROM {TABLE}, (SELECT {{tsquery}}) AS query(q)
    WHERE search @@ q
    ORDER BY score DESC, passage_id LIMIT :limit
"""


class KnowledgeStoreError(RuntimeError):
    """The knowledge tables cannot be created or read; the message says what to do."""


class KnowledgeUnavailableError(KnowledgeStoreError, StoreUnavailableError):
    """The database did not answer a search (a run ends as on any store failure)."""


@dataclass(frozen=True)
class RunbookPassage:
    """One ``##`` section of a runbook, ready to index."""

    id: str
    title: str
    text: str


def slugify(heading: str) -> str:
    """The id form of a heading: lowercase ASCII words joined by hyphens (accents dropped)."""
    ascii_heading = unicodedata.normalize("NFKD", heading).encode("ascii", "ignore").decode()
    return _SLUG.sub("-", ascii_heading.lower()).strip("-") or "section"


def chunk_runbook(runbook: str, markdown: str) -> list[RunbookPassage]:
    """Cut one runbook into passages: the text before the first ``##`` is ``#overview``."""
    title, sections = _split_sections(runbook, markdown)
    passages: list[RunbookPassage] = []
    seen: set[str] = set()
    for heading, lines in sections:
        body = "\n".join(lines).strip()
        if not body:
            continue
        section = slugify(heading)
        candidate, n = section, 1
        while candidate in seen:  # repeated headings stay distinct and keep document order
            n += 1
            candidate = f"{section}-{n}"
        seen.add(candidate)
        passages.append(RunbookPassage(f"{runbook}#{candidate}", f"{title} — {heading}", body))
    return passages


def _split_sections(runbook: str, markdown: str) -> tuple[str, list[tuple[str, list[str]]]]:
    title: str | None = None
    sections: list[tuple[str, list[str]]] = [("Overview", [])]
    for line in markdown.splitlines():
        if line.startswith("## "):
            sections.append((line[3:].strip(), []))
        elif line.startswith("# ") and title is None:
            title = line[2:].strip()
        else:
            sections[-1][1].append(line)
    if not title:
        raise ValueError(f"runbook {runbook!r} has no '# Title' line: add one as its first line")
    return title, sections


def load_runbooks() -> list[RunbookPassage]:
    """Every passage of the shipped runbooks, in file then section order."""
    folder = resources.files("infrastructure").joinpath("runbooks")
    files = sorted((f for f in folder.iterdir() if f.name.endswith(".md")), key=lambda f: f.name)
    passages: list[RunbookPassage] = []
    for file in files:
        passages.extend(chunk_runbook(file.name.removesuffix(".md"), file.read_text("utf-8")))
    return passages


def search_terms(query: str) -> list[str]:
    """The distinct, lowercased content words of a query (bounded in number and length)."""
    terms: list[str] = []
    for word in _WORD.findall(query[:MAX_QUERY_CHARS].casefold()):
        if word in STOP_WORDS or len(word) > MAX_TERM_CHARS or word in terms:
            continue
        terms.append(word)
        if len(terms) == MAX_TERMS:
            break
    return terms


def fts5_match_expression(terms: Sequence[str]) -> str:
    """An FTS5 MATCH expression OR-ing each term as a quoted string (never operator syntax)."""
    return " OR ".join('"' + term.replace('"', '""') + '"' for term in terms)


def create_knowledge_tables(engine: Engine) -> None:
    """Create the passage table and its full-text index if missing; safe to run again."""
    with engine.begin() as conn:
        _create_tables(conn)


def _create_tables(conn: Connection) -> None:
    dialect = conn.dialect.name
    if dialect == "postgresql":
        if conn.execute(text("SELECT current_schema()")).scalar() is None:
            path = conn.execute(text("SHOW search_path")).scalar()
            raise KnowledgeStoreError(
                f"PostgreSQL schema {path!r} does not exist: initialise the store first"
            )
        conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _PG_LOCK_KEY})
        statements = _PG_DDL
    elif dialect == "sqlite":
        statements = _SQLITE_DDL
    else:
        raise KnowledgeStoreError(f"no full-text search on {dialect!r}: use SQLite or PostgreSQL")
    for statement in statements:
        conn.execute(text(statement))


def index_runbooks(engine: Engine) -> int:
    """(Re-)index the shipped runbooks, replacing every stored passage; returns the count."""
    passages = load_runbooks()
    with engine.begin() as conn:
        _create_tables(conn)
        if conn.dialect.name == "postgresql":
            # Writers queue; readers keep reading the old rows until this commits.
            conn.execute(text(f"LOCK TABLE {TABLE} IN EXCLUSIVE MODE"))
        conn.execute(text(f"DELETE FROM {TABLE}"))
        conn.execute(
            text(f"INSERT INTO {TABLE} (passage_id, title, body) VALUES (:id, :title, :body)"),
            [{"id": p.id, "title": p.title, "body": p.text} for p in passages],
        )
    return len(passages)


def _first_line(error: object) -> str:
    lines = str(error).strip().splitlines()
    return lines[0] if lines else type(error).__name__


class SqlKnowledgeRetriever:
    """A ``KnowledgeRetriever`` over the indexed runbooks (SQLite FTS5 or PostgreSQL tsvector)."""

    def __init__(self, engine: Engine) -> None:
        """Search the passages stored in this engine's database."""
        self._engine = engine

    def search(self, query: str, limit: int = 5) -> Sequence[Passage]:
        """The best passages first; empty for no match, no content words or ``limit < 1``."""
        terms = search_terms(query)
        if not terms or limit < 1:
            return []
        if self._engine.dialect.name == "postgresql":
            names = [f"t{i}" for i in range(len(terms))]
            tsquery = " || ".join(f"plainto_tsquery('english', :{name})" for name in names)
            statement = text(_PG_SEARCH.format(tsquery=tsquery))
            params: dict[str, object] = dict(zip(names, terms, strict=True))
        else:
            statement = text(_SQLITE_SEARCH)
            params = {"match": fts5_match_expression(terms)}
        pool = min(limit * 4, 100)  # the full-text ranking's best, re-ranked by their headings
        try:
            with self._engine.connect() as conn:
                rows = conn.execute(statement, params | {"limit": pool}).all()
        except (OperationalError, ProgrammingError) as error:
            if isinstance(error, OperationalError) and self._engine.dialect.name == "postgresql":
                # there a missing table is a ProgrammingError: this is the server not answering
                raise KnowledgeUnavailableError(
                    f"cannot search the knowledge table {TABLE!r}: the database is unavailable"
                    f" ({error.orig})"
                ) from error
            raise KnowledgeStoreError(
                f"cannot search the runbook index (table {TABLE!r}: {_first_line(error.orig)});"
                " if the runbooks were never indexed, run `harness db init --sample`"
            ) from error
        found = [Passage(id=r[0], title=r[1], text=r[2], score=float(r[3])) for r in rows]
        return ranked(found, terms)[:limit]


def ranked(passages: Sequence[Passage], terms: Sequence[str]) -> list[Passage]:
    """Passages by full-text score, raised by how much of their heading the question asks.

    A section is named for what it answers ("How to restart a service"), so a question that
    asks for its heading's words is answered there, not in a passage that merely mentions
    them: the score is multiplied by one plus :data:`HEADING_WEIGHT` times the query words the
    heading holds times the share of the heading's words they are. Words match on a shared stem
    ("restart", "restarting"); ties keep the full-text order.
    """
    scored = [
        replace(p, score=p.score * (1 + HEADING_WEIGHT * _heading_weight(p.title, terms)))
        for p in passages
    ]
    return sorted(scored, key=lambda p: -p.score)


ASKED_AS: dict[str, frozenset[str]] = {
    "diagnose": frozenset(
        "see check find count identify investigate tell look show inspect debug".split()
    ),
    "mitigate": frozenset("fix stop relieve recover resolve".split()),
    "prevent": frozenset("avoid".split()),
    "retention": frozenset("keep kept long retain".split()),
}
"""The words a question asks for a runbook's usual section with ("how do I *see* which service
holds the connections" asks for its Diagnose section), besides the heading's own words."""


def _heading_weight(title: str, terms: Sequence[str]) -> float:
    heading = title.rpartition(" — ")[2].casefold()
    words = [w for w in _WORD.findall(heading) if w not in STOP_WORDS]
    asked = [w for w in words if any(_asks(term, w) for term in terms)]
    matched = sum(1 for term in terms if any(_asks(term, w) for w in words))
    return matched * len(asked) / len(words) if words else 0.0


def _asks(term: str, word: str) -> bool:
    """Whether a question's ``term`` asks for a heading's ``word``."""
    return _same_stem(term, word) or term in ASKED_AS.get(word, frozenset())


def _same_stem(a: str, b: str) -> bool:
    """Whether two words share a stem: one starts with the other's first letters (at least 4)."""
    n = max(4, min(len(a), len(b)) - 2)
    return len(a) >= 4 and len(b) >= 4 and a[:n] == b[:n]
