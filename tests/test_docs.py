"""Docs are code: every package README's event table matches the events it declares."""

import importlib
import pkgutil
import re
from pathlib import Path

import pytest

import dsh
from dsh.kernel import declared_events

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


def test_readme_python_examples_run(tmp_path: Path) -> None:
    import subprocess
    import sys

    readme = SRC.parents[1] / "README.md"
    blocks = re.findall(r"```python\n(.*?)```", readme.read_text(), re.S)
    runnable = [b for b in blocks if "asyncio.run(" in b]
    assert runnable, "the README has no runnable example"
    for i, block in enumerate(runnable):
        script = tmp_path / f"example_{i}.py"
        script.write_text(block)
        result = subprocess.run(
            [sys.executable, str(script)], capture_output=True, text=True, timeout=60
        )
        assert result.returncode == 0, result.stderr
        assert result.stdout.strip(), "the example printed nothing"


def test_public_api_is_importable_and_lazy() -> None:
    import subprocess
    import sys

    code = (
        "import sys, dsh\n"
        "assert 'dsh.agent' not in sys.modules and 'pydantic' not in sys.modules\n"
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


def test_the_llm_readme_states_the_retry_policy_defaults() -> None:
    from dsh.llm import RetryPolicy

    text = " ".join((SRC / "llm" / "README.md").read_text().split())
    found = re.search(r"`RetryPolicy\{mode: normal\|always\|never, (.*?)\}`", text)
    assert found is not None, "the llm README no longer spells RetryPolicy out"
    stated = dict(re.findall(r"(\w+)=(\([^)]*\)|[^,]+)", found.group(1)))
    default = RetryPolicy()
    assert stated == {
        "max_retries": str(default.max_retries),
        "base_delay_ms": str(default.base_delay_ms),
        "max_delay_ms": str(default.max_delay_ms),
        "retryable_codes": "(" + ", ".join(default.retryable_codes) + ")",
        "jitter_ratio": str(default.jitter_ratio),
    }
