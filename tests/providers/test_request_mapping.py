"""GenerateOptions → the Chat Completions request the server receives."""

from __future__ import annotations

import itertools
import json

from dsh.llm import (
    GenerateOptions,
    ImageBlock,
    ReasoningBlock,
    TextBlock,
    ToolCallBlock,
    ToolSchema,
    assistant_message,
    plugin_source,
    tool_result_message,
    user_message,
)
from dsh.llm.adapters import USER_AGENT, Dialect, RequestEncoder, wire_messages
from dsh.llm.adapters._request import encode_json
from dsh.testing import reply

from .conftest import KEY, PROVIDER, Harness

READ = ToolSchema("read", "Read a file.", {"type": "object", "properties": {"path": {}}})


def history() -> list:  # type: ignore[type-arg]
    return [
        user_message("list the files"),
        assistant_message(
            [
                ReasoningBlock("I should call ls."),
                TextBlock("Looking."),
                ToolCallBlock("call_a", "ls", '{"dir":"."}'),
                ToolCallBlock("call_b", "read", '{"path":"x"}'),
            ],
            provider=PROVIDER,
            model="deepseek-v4-flash",
        ),
        tool_result_message("call_a", [TextBlock("a.txt\nb.txt")]),
        tool_result_message("call_b", [TextBlock("Error: missing")], is_error=True),
        assistant_message([TextBlock("Two files.")], provider=PROVIDER, model="m"),
        user_message("thanks"),
    ]


async def test_full_request_shape(harness: Harness) -> None:
    harness.server.add("ok")
    await harness.mount()
    options = GenerateOptions(
        PROVIDER,
        "deepseek-v4-pro",
        history(),
        system="Be brief.",
        tools=(READ,),
        reasoning_effort="max",
        temperature=0.5,
        max_tokens=1024,
        stop=("END",),
        top_p=0.9,
    )
    await harness.stream(options)
    body = harness.bodies[0]
    assert list(body) == [
        "model",
        "messages",
        "stream",
        "stream_options",
        "thinking",
        "reasoning_effort",
        "tools",
        "temperature",
        "top_p",
        "max_tokens",
        "stop",
    ]
    assert body["model"] == "deepseek-v4-pro"
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    assert body["thinking"] == {"type": "enabled"} and body["reasoning_effort"] == "max"
    assert body["temperature"] == 0.5 and body["max_tokens"] == 1024 and body["stop"] == ["END"]
    assert body["top_p"] == 0.9
    assert body["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "read",
                "description": "Read a file.",
                "parameters": dict(READ.parameters),
            },
        }
    ]
    assert body["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "list the files"},
        {
            "role": "assistant",
            "content": "Looking.",
            "reasoning_content": "I should call ls.",
            "tool_calls": [
                {
                    "id": "call_a",
                    "type": "function",
                    "function": {"name": "ls", "arguments": '{"dir":"."}'},
                },
                {
                    "id": "call_b",
                    "type": "function",
                    "function": {"name": "read", "arguments": '{"path":"x"}'},
                },
            ],
        },
        {"role": "tool", "tool_call_id": "call_a", "content": "a.txt\nb.txt"},
        {"role": "tool", "tool_call_id": "call_b", "content": "Error: missing"},
        {"role": "assistant", "content": "Two files."},
        {"role": "user", "content": "thanks"},
    ]


async def test_headers_name_dsh_and_carry_the_key(harness: Harness) -> None:
    harness.server.add("ok")
    await harness.mount()
    await harness.call()
    headers = harness.server.requests[0].headers
    assert headers["user-agent"] == USER_AGENT
    assert USER_AGENT.startswith("dsh/")
    assert headers["authorization"] == f"Bearer {KEY}"
    assert headers["content-type"] == "application/json"
    assert headers["accept"] == "text/event-stream"
    assert harness.server.requests[0].path == "/chat/completions"


async def test_model_defaults_fill_effort_and_max_tokens(harness: Harness) -> None:
    harness.server.add("a", "b", "c")
    await harness.mount()
    await harness.call()  # deepseek-v4-flash: effort high, 256000 by default
    await harness.call(reasoning_effort="off")
    await harness.call(model="some-future-model", max_tokens=99)  # unknown: same defaults
    first, off, unknown = harness.bodies
    assert first["thinking"] == {"type": "enabled"} and first["reasoning_effort"] == "high"
    assert first["max_tokens"] == 256_000
    assert off["thinking"] == {"type": "disabled"} and "reasoning_effort" not in off
    assert unknown["model"] == "some-future-model" and unknown["max_tokens"] == 99
    assert unknown["reasoning_effort"] == "high"


def test_reasoning_replay_follows_the_dialect() -> None:
    calls = assistant_message([ToolCallBlock("c", "ls", "{}")], provider="p", model="m")
    thought = assistant_message([ReasoningBlock("hmm"), TextBlock("hi")], provider="p", model="m")
    plain = assistant_message([TextBlock("hi")], provider="p", model="m")
    deepseek = Dialect("deepseek-thinking", replay_reasoning=True)
    # A tool-call message always carries reasoning_content in thinking mode ("" if none).
    assert wire_messages(calls, deepseek)[0]["reasoning_content"] == ""
    assert wire_messages(thought, deepseek)[0]["reasoning_content"] == "hmm"
    assert "reasoning_content" not in wire_messages(plain, deepseek)[0]
    assert "reasoning_content" not in wire_messages(thought, Dialect())[0]
    assert wire_messages(calls, Dialect())[0] == {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {"id": "c", "type": "function", "function": {"name": "ls", "arguments": "{}"}}
        ],
    }


def test_user_content_mapping() -> None:
    image = ImageBlock({"url": "https://example.com/a.png"})
    mixed = user_message([TextBlock("look"), image, TextBlock("at this")])
    assert wire_messages(mixed, Dialect())[0]["content"] == (
        "look\n[image omitted: this model reads text only]\nat this"
    )
    assert wire_messages(mixed, Dialect(images=True))[0]["content"] == [
        {"type": "text", "text": "look"},
        {"type": "image_url", "image_url": {"url": "https://example.com/a.png"}},
        {"type": "text", "text": "at this"},
    ]
    inline = ImageBlock({"data": "AAAA", "mediaType": "image/png"})
    parts = wire_messages(user_message([inline]), Dialect(images=True))[0]["content"]
    assert parts == [{"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}]
    injected = user_message("context", plugin_source("notes", "notice"))
    assert wire_messages(injected, Dialect()) == [{"role": "user", "content": "context"}]


def test_each_step_extends_the_previous_request_byte_for_byte() -> None:
    """No state between requests, yet a growing history gives a growing byte prefix (what a
    provider's prompt cache needs), and a rewrite (same id, new object) is sent as it is."""
    encoder, messages = RequestEncoder(Dialect()), history()
    options = [GenerateOptions("p", "m", messages[:n], system="sys") for n in range(1, 7)]
    steps = [encoder.messages_json(o) for o in options]
    assert json.loads(steps[-1]) == [
        {"role": "system", "content": "sys"},
        *(m for msg in messages for m in wire_messages(msg, Dialect())),
    ]
    assert all(b.startswith(a[:-1]) for a, b in itertools.pairwise(steps))
    for step, body in zip(options, (encoder.body(o, stream=True) for o in options), strict=True):
        assert b'{"model":"m","messages":' + encoder.messages_json(step) + b',"stream":' in body
    rewritten = user_message("list the files, please", id=messages[0].id)
    text = encoder.messages_json(GenerateOptions("p", "m", [rewritten]))
    assert json.loads(text) == [{"role": "user", "content": "list the files, please"}]


def test_the_body_is_compact_utf8_in_the_wire_key_order() -> None:
    tool = ToolSchema("read", "Lit un fichier — vite.", {"type": "object"})
    options = GenerateOptions(
        "p", "m", [user_message('héllo 😀\n"q"')], system="é", tools=(tool,), temperature=0.5
    )
    body = RequestEncoder(Dialect()).body(options, stream=False, extra={"seed": 7})
    assert body == json.dumps(json.loads(body), ensure_ascii=False, separators=(",", ":")).encode()
    assert "héllo 😀".encode() in body and "— vite".encode() in body and b"\\u" not in body
    assert list(json.loads(body)) == ["model", "messages", "stream", "tools", "temperature", "seed"]


def test_lone_surrogates_anywhere_are_sent_as_replacement_characters() -> None:
    tool = ToolSchema("t\udc00", "d", {"properties": {"k\ud83d": {}}})
    options = GenerateOptions(
        "p", "m", [user_message("a\ud83d\ude00b \ud83d")], system="s\udfff", tools=(tool,)
    )
    body = json.loads(RequestEncoder(Dialect()).body(options, stream=True, extra={"x": "\ud800"}))
    assert body["messages"] == [
        {"role": "system", "content": "s\ufffd"},
        {"role": "user", "content": "a😀b \ufffd"},
    ]
    function = body["tools"][0]["function"]
    assert function["name"] == "t\ufffd"
    assert function["parameters"] == {"properties": {"k\ufffd": {}}}
    assert body["x"] == "\ufffd"


async def test_non_streaming_route_asks_for_a_whole_completion(harness: Harness) -> None:
    harness.server.add(reply("whole"))
    await harness.mount(stream=False)
    call = await harness.call()
    body = harness.bodies[0]
    assert body["stream"] is False and "stream_options" not in body
    assert harness.server.requests[0].headers["accept"] == "application/json"
    assert call.assembler.message(provider=PROVIDER, model="m").text == "whole"


def test_a_step_s_body_is_what_request_says() -> None:
    """The bytes sent are exactly `request()` encoded, at every step."""
    encoder, messages = RequestEncoder(Dialect()), history()
    for n in range(1, 7):
        step = GenerateOptions("p", "m", messages[:n], system="sys")
        assert encoder.body(step, stream=True) == encode_json(encoder.request(step, stream=True))
