"""Elicitation: a server's `elicitation/create` asked of the person through the questions
service (`ask_user_question`'s surfaces: chat, web, ACP, a JSON-RPC client), the answers
checked against the server's schema; nobody there (a headless run) declines."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from ..._context import Context
from ...kernel import Aborted, Next
from ...llm import Json
from ...tools import ToolExecution, ToolResult
from ..ask_user import QUESTIONS, Answer, Option, Question, QuestionError, QuestionRequest
from ._tools import server_prefix

__all__ = ["Action", "Elicitations", "content_from", "questions_for"]

Action = Literal["accept", "decline", "cancel"]
_ATTEMPTS = 3
_YES, _NO = "yes", "no"
_DONE, _DECLINE = "Done", "Decline"
_log = logging.getLogger("dsh.mcp")


class ElicitError(Exception):
    """An answer that does not fit the server's schema; the message names the field."""


class Elicitations:
    """The MCP calls in flight (the agent a server's question belongs to) and the asking."""

    def __init__(self, ctx: Context) -> None:
        self._ctx = ctx
        self._calls: list[ToolExecution] = []

    async def track(self, call: ToolExecution, nxt: Next[ToolExecution, ToolResult]) -> ToolResult:
        """`tools/execute` middleware: remembers each MCP call while it runs."""
        if not call.name.startswith("mcp__"):
            return await nxt()
        self._calls.append(call)
        try:
            return await nxt()
        finally:
            self._calls.remove(call)

    async def ask(
        self, server: str, params: Mapping[str, Json]
    ) -> tuple[Action, dict[str, Json] | None]:
        """The person's response to server `server`'s request (`params`: wire JSON)."""
        message = str(params.get("message") or "")
        prefix = server_prefix(server)
        call = next((c for c in reversed(self._calls) if c.name.startswith(prefix)), None)
        questions = self._ctx.get(QUESTIONS)
        if call is None or questions is None or not questions.has_answerer:
            _log.warning(
                'MCP server "%s" asked for input ("%s"); nobody can answer here: declined',
                server,
                message,
            )
            return "decline", None
        url = params.get("url") if params.get("mode") == "url" else None
        requested = params.get("requestedSchema")  # an object: the SDK validated the request
        schema: Mapping[str, Json] = requested if isinstance(requested, dict) else {}
        asked = (
            _url_question(server, message, str(url))
            if url
            else questions_for(server, message, schema)
        )
        session = call.session
        for _ in range(_ATTEMPTS):
            request = QuestionRequest(
                call.call_id, asked, call.agent, session.id if session else None, call.signal
            )
            try:
                answers = await questions.ask(request)
            except Aborted:
                return "cancel", None
            except QuestionError as exc:  # this surface cannot ask it (an editor: choices only)
                _log.warning('MCP server "%s" asked for input; declined: %s', server, exc)
                return "decline", None
            if answers is None:
                return "decline", None
            if url:
                return ("accept" if answers[0].selected == (_DONE,) else "decline"), None
            try:
                return "accept", content_from(schema, answers)
            except ElicitError as exc:
                asked = _noted(asked, str(exc))
        return "cancel", None


def questions_for(server: str, message: str, schema: Mapping[str, Json]) -> tuple[Question, ...]:
    """One question per property of the (flat) requested schema, the server's message on
    the first; a schema without properties is a yes/no confirmation."""
    fields = _fields(schema)
    if not fields:
        return (Question(message, server, (Option(_YES), Option(_NO))),)
    asked = []
    for index, (key, prop, required) in enumerate(fields):
        label = str(prop.get("title") or key)
        about = prop.get("description")
        text = label + (f" — {about}" if about else "") + ("" if required else " (optional)")
        options = tuple(Option(shown) for shown, _ in _choices(prop))
        multi = prop.get("type") == "array"
        asked.append(Question(f"{message}\n{text}" if index == 0 else text, server, options, multi))
    return tuple(asked)


def content_from(schema: Mapping[str, Json], answers: Sequence[Answer]) -> dict[str, Json]:
    """The accepted content: each answer as its property's type; `ElicitError` when one
    does not fit (missing, not a number, out of range, not a choice)."""
    fields = _fields(schema)
    if not fields:
        if answers[0].selected != (_YES,):
            raise ElicitError('answer "yes" to confirm (or decline)')
        return {}
    content: dict[str, Json] = {}
    for (key, prop, required), answer in zip(fields, answers, strict=True):
        given = list(answer.selected) or ([answer.text.strip()] if answer.text.strip() else [])
        label = str(prop.get("title") or key)
        if not given:
            if required:
                raise ElicitError(f"{label}: an answer is needed")
            continue
        try:
            content[key] = _value(prop, given)
        except ElicitError as exc:
            raise ElicitError(f"{label}: {exc}") from None
    return content


def _fields(schema: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any], bool]]:
    properties = schema.get("properties") or {}
    required = set(schema.get("required") or ())
    return [
        (key, prop, key in required)
        for key, prop in properties.items()
        if isinstance(prop, Mapping)
    ]


def _choices(prop: Mapping[str, Any]) -> list[tuple[str, Json]]:
    """(label shown, value sent) of a property with fixed choices."""
    if prop.get("type") == "boolean":
        return [(_YES, True), (_NO, False)]
    source = prop.get("items") if prop.get("type") == "array" else prop
    if not isinstance(source, Mapping):
        return []
    if isinstance(source.get("enum"), list):
        names = source.get("enumNames")
        values = source["enum"]
        shown = names if isinstance(names, list) and len(names) == len(values) else values
        return [(str(s), v) for s, v in zip(shown, values, strict=True)]
    titled = source.get("oneOf") or source.get("anyOf")
    if isinstance(titled, list):
        return [
            (str(o.get("title", o.get("const"))), o.get("const"))
            for o in titled
            if isinstance(o, Mapping)
        ]
    return []


def _value(prop: Mapping[str, Any], given: list[str]) -> Json:
    choices = _choices(prop)
    if choices:
        values = {shown: value for shown, value in choices} | {str(v): v for _, v in choices}
        unknown = [g for g in given if g not in values]
        if unknown:
            raise ElicitError(f"expected one of {', '.join(s for s, _ in choices)}")
        picked = [values[g] for g in given]
        return picked if prop.get("type") == "array" else picked[0]
    text = given[0]
    kind = prop.get("type")
    if kind in ("integer", "number"):
        try:
            number: float = int(text) if kind == "integer" else float(text)
        except ValueError:
            raise ElicitError(
                f"expected {'an integer' if kind == 'integer' else 'a number'}"
            ) from None
        _check_range(number, prop.get("minimum"), prop.get("maximum"))
        return number
    _check_range(len(text), prop.get("minLength"), prop.get("maxLength"), "characters")
    return text


def _check_range(value: float, low: object, high: object, unit: str = "") -> None:
    suffix = f" {unit}" if unit else ""
    if isinstance(low, int | float) and value < low:
        raise ElicitError(f"at least {low}{suffix}")
    if isinstance(high, int | float) and value > high:
        raise ElicitError(f"at most {high}{suffix}")


def _url_question(server: str, message: str, url: str) -> tuple[Question, ...]:
    options = (Option(_DONE, "I opened the address and finished there"), Option(_DECLINE))
    return (Question(f"{message}\nOpen: {url}", server, options),)


def _noted(asked: tuple[Question, ...], problem: str) -> tuple[Question, ...]:
    first = asked[0]
    noted = Question(
        f"({problem}) {first.question}", first.header, first.options, first.multi_select
    )
    return (noted, *asked[1:])
