"""Large MCP catalogs stay out of the prompt: past a threshold the MCP tools' schemas are
deferred and the model gets `tool_search`, which loads the tools it picks into the next
request. Loaded tools stay for the session, after every other tool (the prefix holds)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import msgspec

from ...events import ToolCallEvent, ToolResultEvent, typed_as
from ...llm import ContentBlock, Json, Message, TextBlock, ToolResultBlock, ToolSchema, text_of
from ...prompt import PromptAssembly
from ...tools import ToolDefinition, ToolRunContext

__all__ = ["TOOL_SEARCH", "Catalog", "Deferral", "DeferralOptions", "search_tool"]

TOOL_SEARCH = "tool_search"
_WORD = re.compile(r"[a-z0-9]+")
_MAX_RESULTS = 5

Catalog = Callable[[object | None], Sequence[tuple[str, str]]]
"""(model-facing name, description) of each MCP tool an agent sees (None: no agent)."""


class DeferralOptions(msgspec.Struct, frozen=True):
    """MCP tools are deferred when an agent sees more than `max_tools` of them, or their
    schemas come to more than `max_tokens` (estimated: 4 characters a token). None: no
    limit of that kind; both None: never deferred."""

    max_tools: int | None = 30
    max_tokens: int | None = 10_000


class Deferral:
    """Per session, the deferred tools it loaded, in the order it loaded them."""

    def __init__(self, options: DeferralOptions, names: Callable[[], frozenset[str]]) -> None:
        self.options = options
        self._names = names
        self._loaded: dict[str, list[str]] = {}
        self._tokens: dict[tuple[str, ...], int] = {}

    def loaded(self, session: str) -> list[str]:
        return self._loaded.get(session, [])

    def _restore(self, agent: object) -> str | None:
        """The agent's session id; the first time, its loads are read back from its log
        (a resumed session, a restarted process: the same tools, in the same order)."""
        session = getattr(agent, "session", None)
        session_id = getattr(session, "id", None)
        if not isinstance(session_id, str) or session_id in self._loaded:
            return session_id if isinstance(session_id, str) else None
        searches: set[str] = set()
        names: list[str] = []
        for event in getattr(session, "events", ()):
            call = typed_as(event, ToolCallEvent)
            if call is not None and call.name == TOOL_SEARCH:
                searches.add(call.call_id)
            result = typed_as(event, ToolResultEvent)
            if result is not None and result.call_id in searches and result.error is None:
                names += _loaded_names(result.message)
        self._loaded[session_id] = list(dict.fromkeys(names))
        return session_id

    def load(self, session: str, names: Iterable[str]) -> list[str]:
        """Add `names` to the session's loaded tools; those that were not loaded yet."""
        loaded = self._loaded.setdefault(session, [])
        new = [name for name in dict.fromkeys(names) if name not in loaded]
        loaded.extend(new)
        return new

    def apply(self, assembly: PromptAssembly, agent: object | None) -> PromptAssembly:
        """The assembly as the model should get it: every tool, without `tool_search`; or,
        deferred, the other tools in their order, then the session's loaded MCP tools."""
        names = self._names()
        mcp = [t for t in assembly.tools if t.name in names]
        deferred = bool(mcp) and self._over(mcp)
        if not deferred and not any(t.name == TOOL_SEARCH for t in assembly.tools):
            return assembly
        others = [t for t in assembly.tools if t.name not in names]
        if not deferred:
            kept = [t for t in assembly.tools if t.name != TOOL_SEARCH]
            return msgspec.structs.replace(assembly, tools=tuple(kept))
        by_name = {t.name: t for t in mcp}
        loaded = [by_name[n] for n in self.loaded(self._restore(agent) or "") if n in by_name]
        return msgspec.structs.replace(assembly, tools=(*others, *loaded))

    def _over(self, tools: list[ToolSchema]) -> bool:
        limit = self.options.max_tools
        if limit is not None and len(tools) > limit:
            return True
        budget = self.options.max_tokens
        return budget is not None and self._estimate(tools) > budget

    def _estimate(self, tools: list[ToolSchema]) -> int:
        key = tuple(t.name for t in tools)
        found = self._tokens.get(key)
        if found is None:
            size = sum(len(json.dumps(t.to_json())) for t in tools)
            self._tokens.clear()  # one catalog at a time is enough
            found = self._tokens[key] = size // 4
        return found


def search_tool(deferral: Deferral, catalog: Catalog) -> ToolDefinition:
    """`tool_search {query, max_results?}`: loads the best matches (or `select:a,b`)."""

    async def search(args: Any, run: ToolRunContext) -> Json:
        tools = catalog(run.agent)
        query = str(args["query"]).strip()
        if query.startswith("select:"):
            wanted = {n.strip() for n in query[len("select:") :].split(",")}
            found = [(name, about) for name, about in tools if name in wanted]
        else:
            found = _ranked(query, tools)[: int(args.get("max_results") or _MAX_RESULTS)]
        session = run.session.id if run.session is not None else ""
        deferral.load(session, [name for name, _ in found])
        return {"query": query, "tools": [{"name": n, "description": d} for n, d in found]}

    return ToolDefinition(
        TOOL_SEARCH,
        "Find and load MCP tools. The MCP servers' tools are not listed up front (there are "
        "many): search their names and descriptions with a few keywords, or load tools by "
        'name with "select:name1,name2". The tools found are loaded: they can be called from '
        "the next step on, and stay loaded for the rest of the session.",
        {
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "Keywords, or select:name1,name2."},
                "max_results": {
                    "type": "integer",
                    "description": f"At most this many tools to load (default {_MAX_RESULTS}).",
                },
            },
            "required": ["query"],
        },
        search,
        render=_render,
        is_concurrency_safe=lambda _args: True,
    )


def _ranked(query: str, tools: Sequence[tuple[str, str]]) -> list[tuple[str, str]]:
    words = _WORD.findall(query.lower())
    scored = []
    for name, about in tools:
        name_words, text = set(_WORD.findall(name.lower())), set(_WORD.findall(about.lower()))
        score = sum(3 * (w in name_words) + (w in name.lower()) + (w in text) for w in words)
        if score:
            scored.append((-score, name, about))
    return [(name, about) for _, name, about in sorted(scored)]


def _loaded_names(message: Message) -> list[str]:
    """The tools a logged `tool_search` result says it loaded (its `- name: …` lines)."""
    names = []
    for block in message.content:
        inner = block.content if isinstance(block, ToolResultBlock) else ()
        for line in text_of(inner).splitlines():
            if line.startswith("- ") and ":" in line:
                names.append(line[2:].split(":", 1)[0])
    return names


def _render(args: Any, value: Any) -> tuple[ContentBlock, ...]:
    found = value["tools"]
    if not found:
        return (TextBlock(f'No MCP tool matches "{value["query"]}": try other words.'),)
    lines = [f"Loaded {len(found)} tools (callable from the next step):"]
    lines += [
        f"- {t['name']}: {t['description'].splitlines()[0] if t['description'] else ''}"
        for t in found
    ]
    return (TextBlock("\n".join(lines)),)
