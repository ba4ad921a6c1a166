"""The runbook knowledge base on a real SQLite file (FTS5) and on PostgreSQL (tsvector)."""

from __future__ import annotations

import re

import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st
from sqlalchemy import Engine, text

from application.ports import KnowledgeRetriever
from infrastructure.database import create_sql_engine
from infrastructure.knowledge import (
    TABLE,
    KnowledgeStoreError,
    SqlKnowledgeRetriever,
    chunk_runbook,
    create_knowledge_tables,
    index_runbooks,
    load_runbooks,
    search_terms,
)
from infrastructure.settings import Settings

PASSAGE_ID = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*#[a-z0-9]+(-[a-z0-9]+)*$")

# A query per topic -> the passage (``runbook#section``) or runbook that must come first.
TOPIC_QUERIES = {
    "p99 latency spike right after a deploy": "deploy-latency-rollback",
    "QueuePool limit reached connection timed out": "db-connection-pool#symptoms",
    "idle in transaction sessions pg_stat_activity": "db-connection-pool",
    "pod OOMKilled exit code 137": "memory-leak-oomkilled",
    "heap grows memory leak profile": "memory-leak-oomkilled#diagnose",
    "x509 certificate has expired": "tls-certificate-expiry#symptoms",
    "renew the TLS cert with cert-manager": "tls-certificate-expiry#renew",
    "error rate alert 5xx burn rate SLO": "error-rate-alerts#what-the-alert-says",
    "who do I page and when to escalate": "oncall-escalation#escalation-path",
    "what does INSUFFICIENT_EVIDENCE mean?": "diagnosis-service#fallbacks",
    "MISSING_REQUIRED_CONTEXT": "diagnosis-service#fallbacks",
    "run TIMED_OUT budget exhausted": "diagnosis-service#budgets-and-deadlines",
    "database migration before rolling back to the previous version": (
        "rollback-checklist#before-rolling-back"
    ),
    "which log level should I use, DEBUG or INFO": "log-levels-retention",
    "postmortem action items owner": "postmortem-template#action-items",
    "blameless root cause": "postmortem-template#root-cause-and-contributing-factors",
    "How do I restart the checkout service?": "service-restart#how-to-restart-a-service",
    "How do I roll back a bad deploy?": "rollback-checklist#how-to-roll-back-a-deploy",
}

HOSTILE_QUERIES = [
    "",
    "   \t\n",
    '"',
    '""',
    '"unbalanced quote',
    "AND(",
    "pool AND",
    "OR OR OR",
    "NOT pool",
    "NEAR(pool connection, 2)",
    "NEAR",
    "*",
    "pool*",
    "-",
    "-pool --connection",
    "^pool",
    "title:pool",
    "{title body}: pool",
    "'; DROP TABLE knowledge_passage; --",
    "pool & | ! <-> :*",
    "(((((",
    "\x00",
    "\x00pool\x00",
    "_",
    "__init__",
    "数据库 连接池 耗尽",
    "ñandú émoji 🔥 ² ½",
    "\u0301\u200b\ufeff",
    "x" * 100_000,
    "pool " * 20_000,
    " ".join(f"w{i}" for i in range(5_000)),
]


@pytest.fixture
def retriever(engine: Engine) -> SqlKnowledgeRetriever:
    """A retriever over freshly indexed runbooks."""
    index_runbooks(engine)
    return SqlKnowledgeRetriever(engine)


def _stored_ids(engine: Engine) -> list[str]:
    with engine.connect() as conn:
        return list(conn.execute(text(f"SELECT passage_id FROM {TABLE}")).scalars())


def test_indexing_twice_replaces_the_rows(engine: Engine) -> None:
    first = index_runbooks(engine)
    second = index_runbooks(engine)
    expected = sorted(passage.id for passage in load_runbooks())
    assert first == second == len(expected)
    assert sorted(_stored_ids(engine)) == expected


def test_creating_the_tables_again_is_harmless(engine: Engine) -> None:
    create_knowledge_tables(engine)
    create_knowledge_tables(engine)
    assert _stored_ids(engine) == []


def test_each_topic_query_finds_its_runbook_first(retriever: SqlKnowledgeRetriever) -> None:
    misses = {}
    for query, expected in TOPIC_QUERIES.items():
        found = retriever.search(query)
        top = found[0].id if found else None
        hit = top == expected if "#" in expected else (top or "").startswith(f"{expected}#")
        if not hit:
            misses[query] = (expected, [passage.id for passage in found])
    assert misses == {}


def test_every_runbook_is_covered_by_a_topic_query() -> None:
    runbooks = {passage.id.split("#")[0] for passage in load_runbooks()}
    assert {expected.split("#")[0] for expected in TOPIC_QUERIES.values()} == runbooks
    assert 8 <= len(runbooks) <= 12


def test_passage_ids_are_stable_unique_and_citeable(retriever: SqlKnowledgeRetriever) -> None:
    passages = load_runbooks()
    ids = [passage.id for passage in passages]
    assert ids == [passage.id for passage in load_runbooks()]
    assert len(set(ids)) == len(ids)
    assert all(PASSAGE_ID.fullmatch(passage_id) for passage_id in ids), ids
    assert {"db-connection-pool#symptoms", "diagnosis-service#fallbacks"} <= set(ids)
    by_id = {passage.id: passage for passage in passages}
    found = retriever.search("connection pool exhausted", limit=10)
    assert found, "a query about the pool must match"
    for passage in found:
        assert passage.text == by_id[passage.id].text
        assert passage.title == by_id[passage.id].title
        assert isinstance(passage.score, float) and passage.score > 0
    scores = [passage.score for passage in found]
    assert scores == sorted(scores, reverse=True)


def test_the_retriever_satisfies_the_port(retriever: SqlKnowledgeRetriever) -> None:
    port: KnowledgeRetriever = retriever
    assert [p.id for p in port.search("OOMKilled", limit=1)] == [
        p.id for p in retriever.search("oomkilled", limit=1)
    ]


@pytest.mark.parametrize("query", ["", "   ", "the and of to", "What is it? How? Why!", "?!.,"])
def test_empty_or_stop_word_queries_return_nothing(
    retriever: SqlKnowledgeRetriever, query: str
) -> None:
    assert retriever.search(query) == []


def test_hostile_inputs_never_raise(retriever: SqlKnowledgeRetriever, engine: Engine) -> None:
    for query in HOSTILE_QUERIES:
        found = retriever.search(query)
        assert isinstance(found, list), query[:40]
        assert len(found) <= 5
    assert retriever.search("pool* AND(connection")[0].id.startswith("db-connection-pool#")
    assert len(_stored_ids(engine)) == len(load_runbooks())


def test_limit_is_honoured(retriever: SqlKnowledgeRetriever) -> None:
    broad = "service latency errors database pods deploy rollback"
    everything = retriever.search(broad, limit=1_000)
    assert 7 < len(everything) <= len(load_runbooks())
    for limit in (1, 2, 7):
        found = retriever.search(broad, limit=limit)
        assert [p.id for p in found] == [p.id for p in everything[:limit]]


@pytest.mark.parametrize("limit", [0, -1])
def test_a_non_positive_limit_returns_nothing(retriever: SqlKnowledgeRetriever, limit: int) -> None:
    assert retriever.search("connection pool", limit=limit) == []


def test_searching_before_indexing_says_what_to_do(engine: Engine) -> None:
    with pytest.raises(KnowledgeStoreError, match="harness db init --sample"):
        SqlKnowledgeRetriever(engine).search("connection pool")


def test_a_missing_postgres_schema_is_reported(pg_settings: Settings) -> None:
    engine = create_sql_engine(pg_settings)
    try:
        with pytest.raises(KnowledgeStoreError, match="does not exist"):
            create_knowledge_tables(engine)
    finally:
        engine.dispose()


def test_chunking_keeps_document_order_and_disambiguates_headings() -> None:
    markdown = "# My Runbook\nIntro.\n## Steps\none\n## Steps\ntwo\n## Empty\n## Ünïcode & Co!\nx\n"
    passages = chunk_runbook("my-runbook", markdown)
    assert [p.id for p in passages] == [
        "my-runbook#overview",
        "my-runbook#steps",
        "my-runbook#steps-2",
        "my-runbook#unicode-co",
    ]
    assert passages[1].title == "My Runbook — Steps"
    assert passages[2].text == "two"
    with pytest.raises(ValueError, match="no '# Title'"):
        chunk_runbook("untitled", "## Only a section\ntext\n")


def test_search_terms_are_bounded_words_without_syntax() -> None:
    assert search_terms('"Pool" AND(conn*) -x NEAR the') == ["pool", "conn", "x", "near"]
    assert len(search_terms(" ".join(f"w{i}" for i in range(1_000)))) == 32
    assert search_terms("a" * 65) == []


QUERY_PIECES = st.sampled_from(['"', "AND", "OR", "NOT", "NEAR(", ")", "*", "-", ":", "^", "pool"])


@hypothesis_settings(
    max_examples=50, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    query=st.one_of(
        st.text(max_size=200),
        st.lists(st.one_of(QUERY_PIECES, st.text(max_size=8)), max_size=20).map(" ".join),
    ),
    limit=st.integers(min_value=-2, max_value=20),
)
def test_arbitrary_queries_never_raise(
    retriever: SqlKnowledgeRetriever, query: str, limit: int
) -> None:
    found = retriever.search(query, limit=limit)
    assert isinstance(found, list)
    assert len(found) <= max(limit, 0)
