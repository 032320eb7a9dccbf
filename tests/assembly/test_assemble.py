"""One runtime assembly: a front door's decisions, applied in one order, checked before
anything starts, then booted."""

from pathlib import Path

import pytest

import dsh
from dsh.assembly import AssemblyError, RuntimeSpec, assemble, start
from dsh.profiles import CORE_ROWS, load_profile
from dsh.workspace import Trust


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("DSH_MODEL", raising=False)
    monkeypatch.delenv("DSH_PROVIDER", raising=False)
    monkeypatch.setenv("DEEPSEEK_API_KEY", "sk-test")
    return tmp_path


def test_each_decision_lands_in_its_row(folder: Path) -> None:
    assembly = assemble(
        RuntimeSpec(
            workspace=str(folder),
            auto_approve=True,
            trust_workspace=True,
            sandbox="read-only",
            otel=True,
            store=f"sqlite:{folder / 's.db'}",
            model="openai:qwen2.5-coder",
            base_url="http://127.0.0.1:9/v1",
        )
    )
    config = {row.id: dict(row.config or {}) for row in assembly.profile.rows}
    assert config["approval"]["auto_approve"] is True
    assert config["hooks"]["trust_workspace"] is config["mcp"]["trust_workspace"] is True
    assert config["sandbox"]["mode"] == "read-only"
    assert config["mcp"]["workspace"] == str(folder)
    assert "otel" in config
    assert config["persistence"]["path"] == str(folder / "s.db")
    assert assembly.route is not None and assembly.route.provider == "openai"
    assert assembly.route.url_from == "--base-url"
    assert config["openai"]["routes"][0]["base_url"] == "http://127.0.0.1:9/v1"
    assert assembly.workspace == folder.resolve()


def test_files_layer_over_the_base_by_id(folder: Path) -> None:
    layer = folder / "extra.yml"
    layer.write_text("- id: agent-loop\n  config: {model: m, provider: scripted}\n")
    base = load_profile(base=CORE_ROWS)
    assembly = assemble(RuntimeSpec(base=base, files=(str(layer),), route=False))
    assert [row.id for row in assembly.profile.rows] == [row.id for row in base.rows]
    assert assembly.profile.row("agent-loop").config == {"model": "m", "provider": "scripted"}  # type: ignore[union-attr]
    assert assembly.files == (str(layer),) and assembly.route is None


def test_an_untrusted_dsh_yml_waits_with_a_note_and_is_read_once_trusted(folder: Path) -> None:
    (folder / "dsh.yml").write_text("- id: retry\n  disabled: true\n")
    spec = RuntimeSpec(local_profile=True, route=False)
    skipped = assemble(spec)
    assert skipped.files == () and skipped.profile.row("retry").disabled is False  # type: ignore[union-attr]
    assert skipped.notes == (
        "dsh.yml is not read: this folder is not trusted (trust it in dsh chat, pass "
        "--trust-workspace to dsh run, or name the file: --profile dsh.yml)",
    )
    for read in (
        assemble(RuntimeSpec(local_profile=True, trust_workspace=True, route=False)),
        (Trust().trust(folder), assemble(spec))[1],
    ):
        assert read.files == (str(folder / "dsh.yml"),) and read.notes == ()
        assert read.profile.row("retry").disabled is True  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (RuntimeSpec(workspace="/no/such/dir"), "--cwd /no/such/dir: no such directory"),
        (
            RuntimeSpec(workspace="/no/such/dir", workspace_from="cwd="),
            "cwd= /no/such/dir: no such directory",
        ),
        (RuntimeSpec(base_url="ftp://x"), "--base-url 'ftp://x': not an http:// or https:// URL"),
        (RuntimeSpec(model="openai:m", provider="openai"), "already names its provider"),
        (
            RuntimeSpec(model="anthropic:claude-x"),
            "no API key for anthropic: set ANTHROPIC_API_KEY",
        ),
    ],
)
def test_bad_decisions_stop_before_anything_starts(
    folder: Path, monkeypatch: pytest.MonkeyPatch, spec: RuntimeSpec, message: str
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(AssemblyError, match=message.replace("(", r"\(").replace(")", r"\)")):
        assemble(spec)


def test_a_sandbox_mode_needs_the_sandbox_row(folder: Path) -> None:
    spec = RuntimeSpec(base=load_profile(base=CORE_ROWS), sandbox="read-only", route=False)
    with pytest.raises(AssemblyError, match="--sandbox needs the sandbox plugin"):
        assemble(spec)


async def test_start_boots_a_dsh_context_and_checks_the_routes_adapter(folder: Path) -> None:
    base = load_profile(base=CORE_ROWS)
    ctx = await start(assemble(RuntimeSpec(base=base, model="deepseek:m", require_key=False)))
    assert isinstance(ctx, dsh.Context)
    await ctx.owner.dispose()
    spec = RuntimeSpec(base=base, model="scripted:m")
    with pytest.raises(AssemblyError) as refused:
        await start(assemble(spec))
    assert str(refused.value) == (
        'no provider "scripted": name one of deepseek:MODEL, openai:MODEL, anthropic:MODEL, '
        "deepseek-anthropic:MODEL, or mount a route in a profile (see `dsh config show`)"
    )
