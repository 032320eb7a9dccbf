"""The model's questions the surfaces' tests ask (`ask_user_question` arguments)."""

from __future__ import annotations

from typing import Any

DATABASE: dict[str, Any] = {
    "question": "Which database?",
    "header": "Database",
    "options": [{"label": "PostgreSQL", "description": "a server"}, {"label": "SQLite"}],
}
CHECKS: dict[str, Any] = {
    "question": "Which checks?",
    "options": [{"label": "lint"}, {"label": "types"}, {"label": "tests"}],
    "multi_select": True,
}
