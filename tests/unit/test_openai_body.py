"""The chat request body as sent: orjson's bytes, the same JSON the client's encoder writes."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from infrastructure.model_openai import encoded

JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1) | st.text(),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(), children, max_size=4)
    ),
    max_leaves=20,
)


def _clients_bytes(body: dict[str, Any]) -> bytes:
    """What the ``openai`` client writes for a JSON body (``openai._utils._json.openapi_dumps``)."""
    return json.dumps(body, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()


@given(st.dictionaries(st.text(), JSON_VALUES, max_size=5))
def test_the_bytes_are_the_json_the_client_would_have_written(body: dict[str, Any]) -> None:
    sent = encoded(body)
    assert isinstance(sent, bytes)
    assert json.loads(sent) == json.loads(_clients_bytes(body))


def test_a_chat_body_with_text_of_every_script_is_sent_unescaped() -> None:
    body = {
        "model": "m",
        "messages": [{"role": "user", "content": '磁盘满了? «ç» \u2028 "q" \\ \n 🚀'}],
        "tools": [{"type": "function", "function": {"name": "f", "parameters": {}}}],
    }
    assert encoded(body) == _clients_bytes(body)


def test_a_body_orjson_refuses_is_written_as_the_client_writes_it() -> None:
    body: dict[str, Any] = {"model": "m", "metadata": {1: "a key that is not text"}}
    assert (
        encoded(body)
        == _clients_bytes(body)
        == b'{"model":"m","metadata":{"1":"a key that is not text"}}'
    )
