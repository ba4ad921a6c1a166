"""A server's lines are cut to a byte limit while they stream: an oversized one is never held."""

from __future__ import annotations

from infrastructure.mcp_lines import KEPT, TOO_LARGE, BoundedLines, Oversized, request_id, too_large


def _feed(limit: int, *chunks: bytes) -> list[bytes | Oversized]:
    lines = BoundedLines(limit)
    return [line for chunk in chunks for line in lines.feed(chunk)]


def test_lines_under_the_limit_come_out_whole_across_chunks() -> None:
    assert _feed(10, b"ab", b"c\nde", b"f\n\ng") == [b"abc", b"def", b""]


def test_a_line_at_the_limit_is_kept_and_one_byte_more_is_not() -> None:
    (kept,) = _feed(4, b"abcd\n")
    (over,) = _feed(4, b"abcde\n")
    assert kept == b"abcd"
    assert isinstance(over, Oversized) and over.size == 5


def test_an_oversized_line_keeps_only_its_head_and_tail_and_the_next_line_is_read() -> None:
    lines = BoundedLines(1000)
    found: list[bytes | Oversized] = []
    head = b'{"jsonrpc":"2.0","id":7,"result":{"text":"'
    found += lines.feed(head)
    for _ in range(100):  # 6.4 MB streamed in 64 KiB chunks
        found += lines.feed(b"x" * 65536)
        assert len(lines._line) <= 1000  # nothing accumulates
    found += lines.feed(b'"}}\n{"jsonrpc":"2.0","id":8,"result":{}}\n')
    over, after = found
    assert isinstance(over, Oversized)
    assert over.size == len(head) + 100 * 65536 + 3
    assert over.head.startswith(head) and len(over.head) <= KEPT and len(over.tail) <= KEPT
    assert over.tail.endswith(b'"}}')
    assert after == b'{"jsonrpc":"2.0","id":8,"result":{}}'


def test_the_request_is_named_from_the_head_or_else_the_tail() -> None:
    assert request_id(Oversized(b'{"jsonrpc":"2.0","id":12,"res', b"", 9)) == 12
    assert request_id(Oversized(b'{"result":{"x', b'x"},"id": "abc"}', 9)) == "abc"
    assert request_id(Oversized(b'{"method":"notifications/x","params', b"}}", 9)) is None


def test_the_error_fails_that_request_naming_the_limit() -> None:
    error = too_large(Oversized(b'{"jsonrpc":"2.0","id":3,', b"", 10**8), 4096)
    assert error is not None and error.id == 3 and error.error.code == TOO_LARGE
    assert error.error.message == (
        "the server's answer was over 4096 bytes (max_message_bytes); not read"
    )
    assert too_large(Oversized(b'{"method":"x"', b"}", 10**8), 4096) is None
