"""The loopback server's emulated prompt cache: the longest prefix shared with any earlier
request of the same model, in 64-token blocks, reported as DeepSeek and OpenAI report it."""

from __future__ import annotations

import httpx

from dsh.testing import OpenAIServer, PrefixCache
from dsh.testing._prefix_cache import BLOCK_TOKENS, prompt_bytes

SYSTEM = {"role": "system", "content": "You are terse. " * 100}
TOOLS = [{"type": "function", "function": {"name": "read", "parameters": {}}}]


def body(*messages: dict[str, str], model: str = "m") -> dict[str, object]:
    return {"model": model, "tools": TOOLS, "messages": [SYSTEM, *messages]}


def test_the_longest_shared_prefix_in_whole_blocks() -> None:
    cache = PrefixCache()
    first = body({"role": "user", "content": "hello " * 200})
    seen = cache.measure(first)
    assert seen.cached_tokens == 0 and seen.prompt_tokens == -(-len(prompt_bytes(first)) // 4)
    longer = body(
        {"role": "user", "content": "hello " * 200}, {"role": "assistant", "content": "hi"}
    )
    again = cache.measure(longer)
    whole_blocks = len(prompt_bytes(first)) // (BLOCK_TOKENS * 4)
    assert again.cached_tokens == whole_blocks * BLOCK_TOKENS > 0
    assert again.missed_tokens == again.prompt_tokens - again.cached_tokens
    # a changed system prompt keeps only the tool list's blocks (none here: it is short)
    changed = {
        **longer,
        "messages": [{"role": "system", "content": "New."}, *longer["messages"][1:]],
    }  # type: ignore[index]
    assert cache.measure(changed).cached_tokens == 0
    assert (
        cache.measure(body({"role": "user", "content": "hello " * 200}, model="n")).cached_tokens
        == 0
    )
    # any earlier request counts, not only the last one
    assert cache.measure(first).cached_tokens == whole_blocks * BLOCK_TOKENS


async def test_usage_on_the_wire_reports_hits_and_misses() -> None:
    answers = []
    server = OpenAIServer(["one", "two"], prefix_cache=True)
    async with server, httpx.AsyncClient(base_url=server.base_url) as client:
        for messages in ([{"role": "user", "content": "x" * 2000}],) * 2:
            wire = {"model": "m", "messages": messages, "stream": False}
            answers.append((await client.post("/chat/completions", json=wire)).json())
    first, second = (a["usage"] for a in answers)
    assert first["prompt_cache_hit_tokens"] == 0
    assert first["prompt_cache_miss_tokens"] == first["prompt_tokens"] > 500
    assert second["prompt_cache_hit_tokens"] == second["prompt_tokens_details"]["cached_tokens"]
    assert second["prompt_cache_hit_tokens"] == (first["prompt_tokens"] * 4 // 256) * 64
    assert server.requests[1].cache is not None
    assert server.requests[1].cache.cached_tokens == second["prompt_cache_hit_tokens"]
