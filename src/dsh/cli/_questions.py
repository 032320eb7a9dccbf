"""The model's questions at the chat prompt: each question with its numbered choices; the
person types numbers or words of their own."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from ..plugins.ask_user import Answer, Question

if TYPE_CHECKING:
    from ._render import Surface

__all__ = ["Asked", "parse_choice"]

REASK = "type choice numbers (one, or several like 1,3 where allowed) or your own answer"


def question_lines(number: int, total: int, question: Question) -> list[tuple[str, str]]:
    """How one question shows: the question, then its choices numbered from 1."""
    head = f"? {question.question}" + (f"  [{question.header}]" if question.header else "")
    if total > 1:
        head = f"? ({number}/{total}) {head[2:]}"
    lines = [(head, "bold yellow")]
    for i, option in enumerate(question.options, 1):
        about = f" — {option.description}" if option.description else ""
        lines.append((f"  {i}. {option.label}{about}", ""))
    if question.options:
        several = "numbers (several: 1,3)" if question.multi_select else "a number"
        lines.append((f"  type {several}, or your own answer", "dim"))
    return lines


def parse_choice(text: str, question: Question) -> Answer | None:
    """The answer typed: choice numbers become their labels, anything else is the person's
    own words; None when numbers do not fit (out of range, several for a single choice)."""
    typed = text.strip()
    tokens = typed.replace(",", " ").split()
    if not question.options or not tokens or not all(t.isdigit() for t in tokens):
        return Answer(text=typed)
    picks = [int(t) for t in tokens]
    if any(not 1 <= p <= len(question.options) for p in picks):
        return None
    if len(picks) > 1 and not question.multi_select:
        return None
    return Answer(tuple(question.options[p - 1].label for p in dict.fromkeys(picks)))


class Asked:
    """The model's questions waiting at the prompt, one at a time; `future` gets one answer
    per question."""

    def __init__(
        self, questions: tuple[Question, ...], future: asyncio.Future[list[Answer]], show: Surface
    ) -> None:
        self.questions = questions
        self.future = future
        self.show = show
        self.answers: list[Answer] = []
        self._print(0)

    @property
    def prompt(self) -> str:
        return "answer » "

    def answer(self, text: str, screen: Surface) -> None:
        if self.future.done():
            return
        question = self.questions[len(self.answers)]
        given = parse_choice(text, question)
        if given is None:
            screen.note(f"{text.strip()!r}: {REASK}", "yellow")
            return
        self.answers.append(given)
        if len(self.answers) == len(self.questions):
            self.future.set_result(self.answers)
        else:
            self._print(len(self.answers))

    def _print(self, index: int) -> None:
        for line, style in question_lines(index + 1, len(self.questions), self.questions[index]):
            self.show.note(line, style)
