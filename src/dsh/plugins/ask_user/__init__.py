"""`ask_user_question`: the model asks the person questions (choices and / or free text)
through a pluggable answerer; with nobody to answer, it is told to decide by itself."""

from ._plugin import DECLINED, AskUserPlugin, ask_user_question, questions_of, render_answers
from ._service import (
    QUESTIONS,
    Answer,
    NoPersonError,
    Option,
    Question,
    QuestionAnswerer,
    QuestionError,
    QuestionRequest,
    UserQuestions,
    check_answers,
)

__all__ = [
    "DECLINED",
    "QUESTIONS",
    "Answer",
    "AskUserPlugin",
    "NoPersonError",
    "Option",
    "Question",
    "QuestionAnswerer",
    "QuestionError",
    "QuestionRequest",
    "UserQuestions",
    "ask_user_question",
    "check_answers",
    "questions_of",
    "render_answers",
]
