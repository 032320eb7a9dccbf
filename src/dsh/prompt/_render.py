"""Pure rendering: strict `{{name}}` interpolation, the system prompt text, runtime contexts.

Grammar: `{{` opens a placeholder that the next `}}` closes. What lies between must be a
variable name (`[a-z][a-z0-9_]*`, no spaces); anything else is an error, so a typo such as
`{{ model }}` fails loudly instead of reaching the model. A `{{` with no later `}}` is
literal text. Substituted values are never scanned again. There is no escape syntax.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Generic, NoReturn, TypeVar

from ._values import NamedText, PromptAssembly, PromptRenderError

__all__ = [
    "RUNTIME_CONTEXT_CLEARED",
    "RUNTIME_CONTEXT_HEADER",
    "join_context_sections",
    "render_context_sections",
    "render_prompt",
]

VARIABLE_NAME = re.compile(r"[a-z][a-z0-9_]*\Z")

RUNTIME_CONTEXT_HEADER = (
    "Runtime context, current as of this message; it supersedes every earlier runtime "
    "context snapshot."
)
"""The first line of a joined runtime-context snapshot."""

RUNTIME_CONTEXT_CLEARED = (
    "There is no runtime context any more; earlier runtime context snapshots no longer apply."
)
"""The snapshot text the loop records when the runtime context became empty."""

_SHOWN = 40  # longest malformed placeholder quoted in an error message

R = TypeVar("R")


class _Last(Generic[R]):
    """The last rendering of one kind, given again for equal parts and variables: an
    agent's assemblies repeat from step to step, and rendering is a pure function of them."""

    __slots__ = ("_last",)

    def __init__(self) -> None:
        self._last: tuple[tuple[NamedText, ...], dict[str, str | None], R] | None = None

    def render(
        self,
        parts: tuple[NamedText, ...],
        variables: Mapping[str, str | None],
        render: Callable[[_Filler], R],
        kind: str,
    ) -> R:
        last = self._last  # one read: a concurrent render replaces the whole entry
        if last is not None and last[0] == parts and variables == last[1]:
            return last[2]
        result = render(_Filler(variables, kind))
        self._last = (parts, dict(variables), result)
        return result


_prompts: _Last[str] = _Last()
_contexts: _Last[tuple[NamedText, ...]] = _Last()


def render_prompt(assembly: PromptAssembly) -> str:
    """The system prompt text: interpolated sections, blank ones dropped, joined by a blank line.

    Raises `PromptRenderError` for an unknown, None-valued or malformed placeholder.
    """

    def render(fill: _Filler) -> str:
        texts = [fill(s.text, s.name) for s in assembly.sections]
        return "\n\n".join(t for t in texts if t.strip())

    return _prompts.render(assembly.sections, assembly.variables, render, "section")


def render_context_sections(assembly: PromptAssembly) -> tuple[NamedText, ...]:
    """The runtime contexts, interpolated, without the blank ones."""

    def render(fill: _Filler) -> tuple[NamedText, ...]:
        rendered = (NamedText(c.name, fill(c.text, c.name)) for c in assembly.contexts)
        return tuple(c for c in rendered if c.text.strip())

    return _contexts.render(assembly.contexts, assembly.variables, render, "context")


def join_context_sections(sections: Sequence[NamedText]) -> str:
    """One snapshot text: '' when there is nothing, else the header line, a blank line and
    the texts separated by blank lines."""
    if not sections:
        return ""
    return "\n\n".join((RUNTIME_CONTEXT_HEADER, *(s.text for s in sections)))


# The first `}}` after a `{{` closes it; a `{{` with no later `}}` never matches.
_PLACEHOLDER = re.compile(r"\{\{(.*?)\}\}", re.S)


class _Filler:
    """Interpolates the texts of one assembly; the usable values are sorted out once."""

    __slots__ = ("kind", "usable", "variables")

    def __init__(self, variables: Mapping[str, str | None], kind: str) -> None:
        self.variables = variables
        self.kind = kind
        # Only well-formed names with a value substitute directly; the rest are errors.
        self.usable = {
            k: v for k, v in variables.items() if v is not None and VARIABLE_NAME.match(k)
        }

    def __call__(self, text: str, part: str) -> str:
        if "{{" not in text:
            return text
        usable = self.usable

        def replace(match: re.Match[str]) -> str:
            value = usable.get(match.group(1))
            return value if value is not None else self.fail(match.group(1), part)

        # re.sub never rescans what a replacement inserted.
        return _PLACEHOLDER.sub(replace, text)

    def fail(self, name: str, part: str) -> NoReturn:
        where = f'({self.kind} "{part}")'
        if VARIABLE_NAME.match(name) is None:
            shown = name if len(name) <= _SHOWN else name[:_SHOWN] + "…"
            raise PromptRenderError(
                f'malformed prompt placeholder "{{{{{shown}}}}}" {where}: a variable name is '
                "lowercase letters, digits and underscores, starting with a letter, "
                "with no spaces",
                placeholder=name,
                part=part,
                reason="malformed",
            )
        if name not in self.variables:
            raise PromptRenderError(
                f'prompt variable "{{{{{name}}}}}" is not defined {where}',
                placeholder=name,
                part=part,
                reason="unknown",
            )
        raise PromptRenderError(
            f'prompt variable "{{{{{name}}}}}" has no value for this assembly {where}',
            placeholder=name,
            part=part,
            reason="none",
        )
