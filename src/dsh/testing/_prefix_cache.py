"""`PrefixCache`: how a provider's prompt cache would answer a request, for `OpenAIServer`.

Providers cache the tokenised prompt in fixed blocks and bill the longest prefix shared with
an earlier request (of the same model) as a hit. Without the provider's tokeniser, the prompt
is the request's `tools`, `system` and `messages` serialised as compact JSON in that order,
and a token is about four bytes of it; a block is 64 such tokens (256 bytes). Each block is
known by the hash of everything up to its end, so a request costs one pass over its bytes.
"""

from __future__ import annotations

import hashlib
import json

import msgspec

from ..llm import Json

__all__ = ["BLOCK_TOKENS", "BYTES_PER_TOKEN", "CacheMeasure", "PrefixCache", "prompt_bytes"]

BYTES_PER_TOKEN = 4
BLOCK_TOKENS = 64
_BLOCK_BYTES = BLOCK_TOKENS * BYTES_PER_TOKEN


class CacheMeasure(msgspec.Struct, frozen=True):
    """One request as the cache saw it, in estimated tokens."""

    prompt_tokens: int
    cached_tokens: int

    @property
    def missed_tokens(self) -> int:
        return self.prompt_tokens - self.cached_tokens


def prompt_bytes(body: Json) -> bytes:
    """The part of a request body a prompt cache keys on, as stable bytes."""
    if not isinstance(body, dict):
        return b""
    parts: list[Json] = [body.get("tools") or [], body.get("system") or ""]
    messages = body.get("messages")
    parts.extend(messages if isinstance(messages, list) else [])
    return b"".join(
        json.dumps(part, ensure_ascii=False, separators=(",", ":")).encode() for part in parts
    )


class PrefixCache:
    """The blocks every earlier request left in the cache, per model."""

    def __init__(self) -> None:
        self._blocks: set[bytes] = set()

    def measure(self, body: Json) -> CacheMeasure:
        """Look `body` up, then remember its blocks."""
        model = body.get("model") if isinstance(body, dict) else None
        data = prompt_bytes(body)
        chain = hashlib.blake2b(str(model).encode(), digest_size=16)
        cached, missed = 0, False
        for start in range(0, len(data) - _BLOCK_BYTES + 1, _BLOCK_BYTES):
            chain.update(data[start : start + _BLOCK_BYTES])
            key = chain.digest()
            if not missed and key in self._blocks:
                cached += BLOCK_TOKENS
            else:
                missed = True
                self._blocks.add(key)
        return CacheMeasure(-(-len(data) // BYTES_PER_TOKEN), cached)
