"""Docs are code: every package README's event table matches the events it declares, and
every self-contained Python block of every README runs."""

import ast
import asyncio
import builtins
import importlib
import os
import pkgutil
import re
import sys
from asyncio.subprocess import PIPE
from pathlib import Path
from typing import Any

import pytest

import dsh
from dsh.kernel import declared_events
from dsh.llm import TokenUsage
from dsh.testing import OpenAIServer, RecordedRequest, Reply, reply, tool_call

SRC = Path(dsh.__file__).parent
ROW = re.compile(r"^\|\s*`([^`]+)`[^|]*\|\s*([a-z]+)")


def import_everything() -> None:
    for info in pkgutil.walk_packages([str(SRC)], "dsh."):
        if not info.name.endswith("__main__"):
            importlib.import_module(info.name)


def packages() -> list[Path]:
    found = []
    for init in SRC.rglob("__init__.py"):
        folder = init.parent
        if folder == SRC or any(p.startswith("_") for p in folder.relative_to(SRC).parts):
            continue
        if folder.name == "plugins" and folder.parent == SRC:
            continue  # the plugins folder only groups plugin packages
        found.append(folder)
    return sorted(found)


def event_table(readme: Path) -> dict[str, str]:
    text = readme.read_text()
    match = re.search(r"^## Events\s*$(.*?)(?=^## |\Z)", text, re.M | re.S)
    if match is None:
        return {}
    rows = {}
    for line in match.group(1).splitlines():
        row = ROW.match(line.strip())
        if row:
            rows[row.group(1)] = row.group(2)
    return rows


@pytest.mark.parametrize("folder", packages(), ids=lambda p: str(p.relative_to(SRC)))
def test_package_readme_has_the_standard_sections(folder: Path) -> None:
    readme = folder / "README.md"
    assert readme.is_file(), f"{folder} has no README.md"
    text = readme.read_text()
    for heading in ("## Owns", "## Events", "## What is not here"):
        assert heading in text, f"{readme} lacks {heading!r}"


@pytest.mark.parametrize("folder", packages(), ids=lambda p: str(p.relative_to(SRC)))
def test_readme_event_table_matches_declarations(folder: Path) -> None:
    import_everything()
    package = "dsh." + ".".join(folder.relative_to(SRC).parts)
    declared = {s.name: s.mode.value for s in declared_events().values() if s.package == package}
    documented = event_table(folder / "README.md")
    assert documented == declared, f"{folder / 'README.md'} event table differs from the code"


# -- every self-contained Python block of every README runs, twice ----------------------------


def readmes() -> list[Path]:
    return [SRC.parents[1] / "README.md", *sorted(SRC.rglob("README.md"))]


def _free_names(tree: ast.AST) -> set[str]:
    """Names a block reads but never binds (a fragment leans on context it does not show)."""
    bound, read = set(dir(builtins)), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            (read if isinstance(node.ctx, ast.Load) else bound).add(node.id)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            bound.add(node.name)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            bound.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif (isinstance(node, ast.MatchAs | ast.MatchStar) and node.name) or (
            isinstance(node, ast.ExceptHandler) and node.name
        ):
            bound.add(node.name)
    return read - bound


def self_contained(block: str) -> bool:
    """A whole program: it compiles as a module and uses no name it does not define."""
    try:
        tree = ast.parse(block)
        compile(tree, "<readme>", "exec")  # a top-level await is a fragment
    except SyntaxError:
        return False
    return not _free_names(tree)


BLOCKS = [
    (readme, index, block)
    for readme in readmes()
    for index, block in enumerate(re.findall(r"```python\n(.*?)```", readme.read_text(), re.S))
    if self_contained(block)
]


def _text_of(message: Any) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    return " ".join(str(b.get("text", "")) for b in content or () if isinstance(b, dict))


def _tool_result(message: Any) -> str | None:
    if message.get("role") == "tool":  # Chat Completions
        return _text_of(message)
    for block in message.get("content") or ():  # Messages
        if isinstance(block, dict) and block.get("type") == "tool_result":
            return _text_of(block)
    return None


def _one_string_tool(tools: list[Any]) -> tuple[str, str] | None:
    for spec in tools:
        spec = spec.get("function", spec)
        schema = spec.get("parameters") or spec.get("input_schema") or {}
        properties = schema.get("properties") or {}
        if len(properties) == 1 and schema.get("required") == list(properties):
            ((name, prop),) = properties.items()
            if prop.get("type") == "string":
                return spec["name"], name
    return None


def doc_model(request: RecordedRequest) -> Reply:
    """The model README examples talk to: it calls a one-string tool on a 'quoted' phrase of
    the prompt, answers a tool result with it, and otherwise writes a haiku."""
    body = request.body
    last = (body.get("messages") or [{}])[-1]
    usage = TokenUsage(20, 5)
    result = _tool_result(last)
    if result is not None:
        return reply(f"{result.strip()}.", usage=usage)
    quoted = re.search(r"'([^']+)'", _text_of(last))
    tool = _one_string_tool(body.get("tools") or [])
    if quoted and tool:
        return reply(tool_call(tool[0], {tool[1]: quoted.group(1)}), usage=usage)
    return reply(
        "Logs fall like soft rain, / each line a quiet witness, / seq by seq.", usage=usage
    )


def _docs_env(tmp_path: Path, base_url: str) -> dict[str, str]:
    keep = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("DEEPSEEK_", "DSH_", "OPENAI_", "ANTHROPIC_"))
    }
    return {
        **keep,
        "HOME": str(tmp_path / "home"),
        "DSH_HOME": str(tmp_path / "home" / ".dsh"),
        "DSH_SESSION_ROOT": str(tmp_path / "sessions"),
        "DEEPSEEK_BASE_URL": base_url,
        "DEEPSEEK_API_KEY": "sk-docs",
        "OPENAI_BASE_URL": base_url + "/v1",
        "ANTHROPIC_BASE_URL": base_url,
        "ANTHROPIC_API_KEY": "sk-docs",
    }


@pytest.mark.parametrize(
    ("readme", "index", "block"),
    BLOCKS,
    ids=[f"{r.relative_to(SRC.parents[1])}#{i}" for r, i, _ in BLOCKS],
)
async def test_readme_blocks_run_twice(
    readme: Path, index: int, block: str, tmp_path: Path
) -> None:
    """Each self-contained block runs as a program, twice in a row in the same home (a second
    run must not trip over what the first left, e.g. a session id)."""
    work = tmp_path / "work"
    work.mkdir()
    async with OpenAIServer([doc_model] * 200) as server:
        script = tmp_path / "example.py"
        script.write_text(block.replace("http://localhost:8000", server.base_url))
        env = _docs_env(tmp_path, server.base_url)
        for attempt in (1, 2):
            process = await asyncio.create_subprocess_exec(
                sys.executable, str(script), cwd=work, env=env, stdout=PIPE, stderr=PIPE
            )
            _out, err = await asyncio.wait_for(process.communicate(), 120)
            where = f"{readme.relative_to(SRC.parents[1])} block {index}, run {attempt}"
            assert process.returncode == 0, f"{where}:\n{err.decode()}"


def test_the_first_python_example_is_the_short_facade_one() -> None:
    blocks = re.findall(r"```python\n(.*?)```", (SRC.parents[1] / "README.md").read_text(), re.S)
    first = blocks[0]
    lines = [line for line in first.splitlines() if line.strip()]
    assert "dsh.Agent(" in first and "run_stream" in first and "@dsh.tool" in first
    assert "http://localhost:8000/v1" in first
    assert len(lines) <= 15, f"{len(lines)} lines"
    assert self_contained(first)


def test_public_api_is_importable_and_lazy() -> None:
    import subprocess
    import sys

    code = (
        "import sys, dsh\n"
        "assert 'dsh.agent' not in sys.modules and 'pydantic' not in sys.modules\n"
        "assert 'dsh.facade' not in sys.modules and 'dsh.events' not in sys.modules\n"
        "missing = [n for n in dsh.__all__ if not hasattr(dsh, n)]\n"
        "assert not missing, missing\n"
        "print('ok')\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.stdout.strip() == "ok", result.stderr


def test_reference_fixtures_are_in_the_repository() -> None:
    from tests.conftest import FIXTURES

    assert (FIXTURES / "ts-logs" / "plain" / "session.jsonl").is_file(), (
        f"the reference fixtures are missing at {FIXTURES}: interchange tests would not run"
    )


def test_nothing_reads_beside_the_checkout() -> None:
    """A user's clone has no `../shared`: neither the code nor the tests may read it."""
    offenders = []
    for root in ("src", "tests", "bench", "scripts"):
        for path in (SRC.parents[1] / root).rglob("*.py"):
            text = path.read_text(encoding="utf-8")
            if re.search(r'parents?(\[\d\])?\s*/\s*"shared"|\.\./shared/', text):
                offenders.append(str(path))
    assert offenders == []


def test_the_event_taxonomy_document_matches_the_declarations() -> None:
    import runpy

    script = runpy.run_path(str(SRC.parents[1] / "scripts" / "event_taxonomy.py"))
    expected = script["table"]()
    actual = (SRC.parents[1] / "docs" / "EVENTS.md").read_text()
    assert actual == expected, (
        "docs/EVENTS.md is stale: python scripts/event_taxonomy.py > docs/EVENTS.md"
    )


def test_the_loop_lifecycle_map_names_code_that_exists() -> None:
    """Each `[Class.method]` / `[_method]` the loop README's lifecycle map points at exists."""
    from dsh.loop import ReactLoopAgent
    from dsh.loop._request import RequestBuilder
    from dsh.loop._scheduler import ToolCallScheduler
    from dsh.loop._turn import TurnRunner

    classes = {
        c.__name__: c for c in (ReactLoopAgent, TurnRunner, RequestBuilder, ToolCallScheduler)
    }
    text = (SRC / "loop" / "README.md").read_text()
    lifecycle = text[text.index("send(): agent/inbox/spliced") :]
    lifecycle = lifecycle[: lifecycle.index("```")]
    names = [
        name
        for bracket in re.findall(r"\[([^\]]+)\]", lifecycle)
        for name in re.findall(r"[A-Za-z_][\w.]*", bracket)
        if name.startswith("_") or "." in name
    ]
    assert len(names) >= 10
    for name in names:
        owner, _, attr = name.rpartition(".")
        candidates = [classes[owner]] if owner else list(classes.values())
        assert any(hasattr(c, attr) for c in candidates), f"{name} is not in the loop's code"
