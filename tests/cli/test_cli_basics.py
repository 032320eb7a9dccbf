import os
import subprocess
import sys
from pathlib import Path

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
