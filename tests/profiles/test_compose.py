import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from dsh.profiles import CompositionError, boot, load_profile, resolve_plugin

MOD = "tests.kernel.plugins_for_tests"


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


@pytest.fixture
def entry_point(tmp_path: Path) -> Iterator[None]:
    """A real installed distribution (a dist-info on sys.path) declaring a dsh.plugins entry."""
    dist = tmp_path / "site" / "dsh_test_plugin-1.0.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: dsh-test-plugin\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text(f"[dsh.plugins]\nrecorder-ep = {MOD}:Recorder\n")
    sys.path.insert(0, str(tmp_path / "site"))
    try:
        yield
    finally:
        sys.path.remove(str(tmp_path / "site"))


def test_resolve_module_attr_and_entry_point(entry_point: None) -> None:
    from tests.kernel.plugins_for_tests import Recorder

    assert resolve_plugin(f"{MOD}:Recorder") is Recorder
    assert resolve_plugin("recorder-ep") is Recorder
    with pytest.raises(LookupError, match="unknown plugin 'nope'"):
        resolve_plugin("nope")
    with pytest.raises(LookupError, match="no attribute"):
        resolve_plugin(f"{MOD}:Missing")


async def test_layers_patch_by_id_and_boot_in_order(tmp_path: Path, entry_point: None) -> None:
    base = write(
        tmp_path,
        "base.yml",
        f"""
- id: a
  name: {MOD}:Recorder
  config: {{label: a, count: 2}}
- id: b
  name: recorder-ep
  config: {{label: b}}
- id: c
  name: {MOD}:Recorder
  config: {{label: c}}
""",
    )
    patch = write(
        tmp_path,
        "patch.yml",
        f"""
- id: a
  config: {{label: a2}}
- id: b
  disabled: true
- id: first
  name: {MOD}:Recorder
  config: {{label: first}}
  before: a
- id: after-c
  name: {MOD}:Recorder
  config: {{label: z}}
  after: c
""",
    )
    profile = load_profile([base, patch], include_default=False)
    assert [r.id for r in profile.rows] == ["first", "a", "b", "c", "after-c"]
    assert profile.row("a").config == {"label": "a2"}  # type: ignore[union-attr]
    assert profile.row("b").disabled  # type: ignore[union-attr]
    assert profile.row("a").source == str(patch)  # type: ignore[union-attr]
    ctx = await boot(profile)
    assert ctx.get("record") == ["firstx1", "a2x1", "cx1", "zx1"]
    await ctx.owner.dispose()
    assert ctx.get("record") is None


async def test_env_interpolation(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "p.yml",
        f"""
- id: a
  name: {MOD}:Recorder
  config: {{label: "${{LABEL}}-${{MISSING:-dflt}}-$${{literal}}"}}
""",
    )
    ctx = await boot(load_profile([path], include_default=False), env={"LABEL": "env"})
    assert ctx.get("record") == ["env-dflt-${literal}x1"]
    with pytest.raises(CompositionError, match=r'row id "a": config\.label: .*LABEL is not set'):
        await boot(load_profile([path], include_default=False), env={})


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("- id: a\n  name: [unclosed\n", r"p\.yml: invalid YAML"),
        (
            f"- id: a\n  name: {MOD}:Recorder\n- id: a\n  name: x:y\n",
            r'row 2 \(id "a"\): duplicate id',
        ),
        ("- id: a\n  nmae: x\n", r'p\.yml: row 1 \(id "a"\): nmae: unknown key \(known keys: id,'),
        ("- id: a\n", r'p\.yml: row id "a": a new row needs a name'),
        ("- id: a\n  name: nope\n", r"p\.yml: row id \"a\": unknown plugin 'nope'"),
        (
            f"- id: a\n  name: {MOD}:Recorder\n  config: {{count: lots}}\n",
            r'p\.yml: plugin "a": invalid config: config\.count: Input should be a valid integer',
        ),
        ("{a: 1}\n", r"p\.yml: expected a list of plugin rows"),
        ("- id: a\n  name: 3\n", r'p\.yml: row 1 \(id "a"\): name: expected a string or null'),
        ("- id: 7\n  name: x\n", r"p\.yml: row 1: id: expected a string, got 7"),
        (
            "- id: a\n  disabled: maybe\n",
            r'p\.yml: row 1 \(id "a"\): disabled: expected true or false or null',
        ),
        (
            "- id: a\n  config: [1]\n",
            r'p\.yml: row 1 \(id "a"\): config: expected a mapping or null, got \[1\]',
        ),
        (
            "- id: a\n  config: {1: x}\n",
            r'row 1 \(id "a"\): config\.1: expected a string, got 1',
        ),
    ],
)
async def test_errors_name_file_row_and_key(tmp_path: Path, text: str, message: str) -> None:
    path = write(tmp_path, "p.yml", text)
    with pytest.raises(CompositionError, match=message):
        await boot(load_profile([path], include_default=False))


async def test_failed_start_leaves_nothing_loaded(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "p.yml",
        f"- id: ok\n  name: {MOD}:Recorder\n- id: bad\n  name: {MOD}:Failing\n",
    )
    from dsh import Context

    root = Context()
    with pytest.raises(CompositionError, match='plugin "bad" failed to start: RuntimeError'):
        await boot(load_profile([path], include_default=False), root=root)
    assert root.get("record") is None
    assert root.fibers() == []


def test_missing_profile_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(CompositionError, match="cannot read profile"):
        load_profile([tmp_path / "absent.yml"])


def test_builtin_plugins_are_the_declared_entry_points() -> None:
    from importlib import metadata

    from dsh.profiles import BUILTIN_PLUGINS

    declared = metadata.distribution("dsh").entry_points.select(group="dsh.plugins")
    assert {entry.name: entry.value for entry in declared} == BUILTIN_PLUGINS
    for entry in declared:
        assert resolve_plugin(entry.name) is entry.load()


async def test_boot_makes_every_context_a_dsh_context() -> None:
    """The root `boot()` makes, a plugin's context, a child and a scope are all of the kind
    that types the core services; a bare kernel tree is refused by `Context.of`."""
    import dsh
    from dsh import kernel
    from dsh.profiles import CORE_ROWS

    seen: list[object] = []

    def probe(ctx: object, config: object) -> None:
        seen.append(ctx)

    async with boot(load_profile(base=CORE_ROWS)) as ctx:
        await ctx.plugin(probe)
        scope = kernel.create_scope(ctx, object())
        for each in (ctx, seen[0], ctx.child("c"), ctx.isolate("i"), scope.ctx):
            assert type(each) is dsh.Context
        assert dsh.Context.of(ctx).tools is ctx.tools
    with pytest.raises(TypeError, match=r"bare dsh\.kernel\.Context"):
        dsh.Context.of(kernel.Context())
