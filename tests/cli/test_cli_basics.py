import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import dsh
from dsh.workspace import Trust

DSH = [sys.executable, "-c", "from dsh.cli import main; main()"]


def run(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NO_COLOR": "1", "PYTHONPATH": str(Path(__file__).parents[2])}
    return subprocess.run(
        [*DSH, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=60
    )


def test_version(tmp_path: Path) -> None:
    result = run(["--version"], tmp_path)
    assert result.returncode == 0
    assert result.stdout.strip() == f"dsh {dsh.__version__}"


def test_config_show_layers_local_and_explicit_profiles(tmp_path: Path) -> None:
    (tmp_path / "dsh.yml").write_text(
        "- id: extra\n  name: tests.kernel.plugins_for_tests:Recorder\n  config: {label: local}\n"
    )
    other = tmp_path / "other.yml"
    other.write_text("- id: extra\n  disabled: true\n")
    Trust().trust(tmp_path)  # ./dsh.yml is read in a trusted folder only
    result = run(["config", "show", "--profile", str(other)], tmp_path)
    assert result.returncode == 0, result.stderr
    assert "# layers:" in result.stdout
    assert "id: extra" in result.stdout
    assert "label: local" in result.stdout
    assert "disabled: true" in result.stdout
    assert "from: " + str(other) in result.stdout


def test_config_show_reports_bad_profile(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yml"
    bad.write_text("- id: x\n  name: no.such.module:Thing\n")
    result = run(["config", "show", "--profile", str(bad)], tmp_path)
    assert result.returncode == 2
    assert f'{bad}: row id "x": cannot import module' in result.stderr


def test_a_command_line_builds_only_the_command_it_names() -> None:
    from typer.testing import CliRunner

    from dsh.cli._app import _table_for, app

    runner = CliRunner()
    names = [info.name for info in [*app.registered_commands, *app.registered_groups]]
    assert len(names) > 10
    for name in names:
        assert name is not None
        table = _table_for(["-v", name, "--help"])
        held = [*table.registered_commands, *table.registered_groups]
        assert [info.name for info in held] == [name]
        alone = runner.invoke(table, [name, "--help"], prog_name="dsh")
        whole = runner.invoke(app, [name, "--help"], prog_name="dsh")
        assert (alone.exit_code, alone.output) == (whole.exit_code, whole.output)
    assert _table_for(["--help"]) is app
    assert _table_for(["--help", "run"]) is app  # the root's help lists every command
    assert _table_for(["--version", "run"]) is app
    assert _table_for(["rnu"]) is app  # its error may suggest the command meant


def test_shell_completion_sees_the_whole_table(monkeypatch: pytest.MonkeyPatch) -> None:
    from dsh.cli._app import _table_for, app

    monkeypatch.setenv("_DSH_COMPLETE", "complete_bash")
    assert _table_for(["run"]) is app


COLLECTOR = """
import gc
import json
import dsh.cli._app as app_module
from dsh._process import YOUNG_COLLECTION, pause_collector, settle_collector
from dsh.cli import main

default = gc.get_threshold()
settle_collector()  # not paused: a library's process is left as it is
seen = [gc.get_freeze_count() == 0 and gc.get_threshold() == default]
dispatch = app_module.run_app
app_module.run_app = lambda table, args: (seen.append(gc.isenabled()), dispatch(table, args))
for argv in (["config", "show"], ["run", "--no-such-option"]):
    try:
        main(argv)
    except SystemExit:
        pass
    seen.append(gc.isenabled())
pause_collector()
seen.append(gc.isenabled())
settle_collector()
seen += [gc.isenabled(), gc.get_freeze_count() > 0]
seen.append(gc.get_threshold() == (YOUNG_COLLECTION, *default[1:]))
print(json.dumps(seen))
"""


def test_the_collector_is_paused_only_until_a_runtime_is_booted(tmp_path: Path) -> None:
    """A command that boots a runtime starts with the collector paused (`start_runtime`
    settles it: frozen boot, young collections less often); any other command runs with it
    on, and `main` always leaves it on. A library's process keeps its own settings."""
    env = {**os.environ, "NO_COLOR": "1", "DSH_HOME": str(tmp_path / "home")}
    result = subprocess.run(
        [sys.executable, "-c", COLLECTOR], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
    seen = json.loads(result.stdout.splitlines()[-1])
    untouched, on_at_show, on_after_show, on_at_run, on_after_run, paused, on, frozen, tuned = seen
    assert untouched and tuned
    assert (on_at_show, on_after_show) == (True, True)
    assert (on_at_run, on_after_run) == (False, True)
    assert (paused, on, frozen) == (False, True, True)


def test_config_show_says_where_sessions_are_kept(tmp_path: Path) -> None:
    env = {**os.environ, "NO_COLOR": "1", "PYTHONPATH": str(Path(__file__).parents[2])}
    for store, shown in (
        (None, f"jsonl in {tmp_path / 'root'}"),
        (f"sqlite:{tmp_path / 's.db'}", f"sqlite at {tmp_path / 's.db'}"),
        ("postgresql://u:secret@127.0.0.1/db", "postgres (the row's url"),
    ):
        env.pop("DSH_SESSION_STORE", None)
        env["DSH_SESSION_ROOT"] = str(tmp_path / "root")
        if store:
            env["DSH_SESSION_STORE"] = store
        result = subprocess.run(
            [*DSH, "config", "show"], cwd=tmp_path, env=env, capture_output=True, text=True
        )
        [row] = [line for line in result.stdout.splitlines() if line.startswith("sessions:")]
        assert shown in row and "secret" not in row, row
