"""`dsh batch --format swebench`: a tiny local git repository acting as a SWE-bench instance,
a scripted agent that edits a file and adds one, and the predictions file read by the official
`swebench` package's own loading functions (grading needs Docker: not done here)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from dsh.batch import BatchError, read_instances, workspace_patch
from dsh.testing import OpenAIServer, reply, tool_call
from tests.cli.support import loopback_env, run_dsh

run_evaluation = pytest.importorskip(
    "swebench.harness.run_evaluation", reason="the swebench extra is not installed"
)


def git(repo: Path, *args: str, stdin: str | None = None) -> str:
    done = subprocess.run(
        ["git", *args], cwd=repo, input=stdin, capture_output=True, text=True, check=True
    )
    return done.stdout.strip()


def make_repo(path: Path) -> str:
    """A repository with one commit (the instance's base commit); returns its hash."""
    path.mkdir()
    git(path, "init", "-q")
    git(path, "config", "user.email", "t@example.com")
    git(path, "config", "user.name", "t")
    (path / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    (path / ".gitignore").write_text("*.log\n")
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", "base")
    return git(path, "rev-parse", "HEAD")


def instance_line(repo: Path, base: str, instance_id: str = "demo__calc-1") -> dict[str, str]:
    return {
        "instance_id": instance_id,
        "repo": "demo/calc",
        "base_commit": base,
        "problem_statement": "add() subtracts instead of adding.",
        "patch": "",  # the official dataset's other fields are read past
        "FAIL_TO_PASS": "[]",
        "repo_path": repo.name,
    }


async def test_a_batch_of_one_instance_writes_predictions_swebench_reads(tmp_path: Path) -> None:
    repo = tmp_path / "calc"
    base = make_repo(repo)
    instances = tmp_path / "instances.jsonl"
    instances.write_text(json.dumps(instance_line(repo, base)) + "\n")
    edit = {"file_path": "calc.py", "old_string": "a - b", "new_string": "a + b"}
    new_test = {"file_path": "test_calc.py", "content": "from calc import add\n"}
    script = [
        reply(tool_call("read", {"file_path": "calc.py"})),  # edit wants the file read first
        reply(tool_call("edit", edit)),
        reply(tool_call("write", new_test)),
        "Fixed: add() adds.",
    ]
    out = tmp_path / "results.jsonl"
    (repo / "build.log").write_text("ignored\n")
    async with OpenAIServer(script) as server:
        env = loopback_env(tmp_path, server.base_url)
        command = ["batch", str(instances), "--out", str(out), "--format", "swebench", "--yes"]
        code, _, err = await run_dsh(env, *command, "--max-steps", "5", "--model-name", "dsh-v1")
    assert code == 0, err
    assert "1 prediction (1 with a patch)" in err
    prompt = server.requests[0].body["messages"][-1]["content"]
    assert "add() subtracts instead of adding." in prompt

    predictions_path = tmp_path / "results.predictions.jsonl"
    predictions = run_evaluation.get_predictions_from_file(
        str(predictions_path), str(instances), "test"
    )
    assert [p["instance_id"] for p in predictions] == ["demo__calc-1"]
    assert predictions[0]["model_name_or_path"] == "dsh-v1"
    patch = predictions[0]["model_patch"]
    assert "-    return a - b" in patch and "+    return a + b" in patch
    assert "new file mode" in patch and "test_calc.py" in patch
    assert "build.log" not in patch  # ignored files stay out
    # The harness's own selection of what to grade takes the instance.
    by_id = {p["instance_id"]: p for p in predictions}
    chosen = run_evaluation.get_dataset_from_preds(
        str(instances), "test", None, by_id, "dsh-test", rewrite_reports=False
    )
    assert [i["instance_id"] for i in chosen] == ["demo__calc-1"]
    # The patch applies to a fresh checkout of the base commit, as the grader applies it.
    fresh = tmp_path / "fresh"
    git(tmp_path, "clone", "-q", str(repo), str(fresh))
    git(fresh, "checkout", "-q", base)
    git(fresh, "apply", "-", stdin=patch)
    assert (fresh / "calc.py").read_text().endswith("return a + b\n")
    assert git(repo, "status", "--porcelain")  # the repo's own index was left alone
    assert git(repo, "diff", "--cached") == ""


async def test_the_per_instance_step_cap_stops_a_task(tmp_path: Path) -> None:
    repo = tmp_path / "calc"
    base = make_repo(repo)
    instances = tmp_path / "instances.jsonl"
    instances.write_text(json.dumps(instance_line(repo, base)) + "\n")
    read = reply(tool_call("read", {"file_path": "calc.py"}))
    script = [reply(tool_call("write", {"file_path": "fix.py", "content": "# fixed\n"})), read]
    out = tmp_path / "results.jsonl"
    async with OpenAIServer(script) as server:
        env = loopback_env(tmp_path, server.base_url)
        command = ["batch", str(instances), "--out", str(out), "--format", "swebench", "--yes"]
        code, _, err = await run_dsh(env, *command, "--max-steps", "1")
    assert code == 1, err  # not completed: stopped at its budget
    assert len(server.requests) == 1
    result = json.loads(out.read_text())
    assert result["finish_reason"] == "aborted"
    predictions = (tmp_path / "results.predictions.jsonl").read_text().splitlines()
    assert "+# fixed" in json.loads(predictions[0])["model_patch"]  # its work so far


def test_bad_instances_are_named_by_line(tmp_path: Path) -> None:
    repo = tmp_path / "calc"
    base = make_repo(repo)
    path = tmp_path / "instances.jsonl"
    line = instance_line(repo, base)
    path.write_text(json.dumps({**line, "problem_statement": ""}) + "\n")
    with pytest.raises(BatchError, match=r"instances.jsonl:1: problem_statement: required"):
        read_instances(path)
    path.write_text(json.dumps({**line, "base_commit": "0" * 40}) + "\n")
    with pytest.raises(BatchError, match=r"instances.jsonl:1: base_commit: 0+ is not a commit"):
        read_instances(path)
    plain = tmp_path / "plain"  # a folder, but no git work tree
    plain.mkdir()
    path.write_text(json.dumps({**line, "repo_path": str(plain)}) + "\n")
    with pytest.raises(BatchError) as raised:
        read_instances(path)
    assert f"instances.jsonl:1: repo_path: {plain} is not a git work tree (clone" in str(
        raised.value
    )
    path.write_text("{oops\n")
    with pytest.raises(BatchError) as raised:
        read_instances(path)
    assert str(raised.value).startswith(f"{path}:1: invalid JSON (")
    line.pop("repo_path")
    path.write_text(json.dumps(line) + "\n")
    with pytest.raises(BatchError, match="repo_path: not given"):
        read_instances(path)
    (tmp_path / "checkouts").mkdir()
    (tmp_path / "calc").rename(tmp_path / "checkouts" / "demo__calc-1")
    found = read_instances(path, repos=tmp_path / "checkouts")
    assert found[0].repo_path == str((tmp_path / "checkouts" / "demo__calc-1").resolve())
    assert workspace_patch(found[0].repo_path, base) == ""


async def test_a_bad_instances_file_exits_2(tmp_path: Path) -> None:
    path = tmp_path / "instances.jsonl"
    path.write_text('{"instance_id": "x"}\n')
    code, _, err = await run_dsh(
        loopback_env(tmp_path, "http://127.0.0.1:9"),
        "batch", str(path), "--out", str(tmp_path / "r.jsonl"), "--format", "swebench",
    )  # fmt: skip
    assert code == 2
    assert (
        err.strip()
        .splitlines()[-1]
        .endswith("instances.jsonl:1: problem_statement: required, a non-empty string")
    )


def test_the_checkouts_git_setup_never_runs_while_its_patch_is_taken(tmp_path: Path) -> None:
    # What the agent may have written into the checkout: a monitor, a filter, an external diff.
    repo = tmp_path / "repo"
    repo.mkdir()
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q", str(repo)], check=True)
    (repo / "a.py").write_text("x = 1\n")
    subprocess.run([*git, "-C", str(repo), "add", "-A"], check=True)
    subprocess.run([*git, "-C", str(repo), "commit", "-qm", "base"], check=True)
    base = subprocess.run(
        ["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True, check=True
    ).stdout.strip()
    marker = tmp_path / "ran"
    hook = tmp_path / "hook.sh"
    hook.write_text(f"#!/bin/sh\ntouch {marker}\ncat\n")
    hook.chmod(0o755)
    for key, value in (
        ("core.fsmonitor", str(hook)),
        ("filter.evil.clean", str(hook)),
        ("diff.external", str(hook)),
    ):
        subprocess.run(["git", "-C", str(repo), "config", key, value], check=True)
    (repo / ".gitattributes").write_text("*.py filter=evil\n")
    (repo / "a.py").write_text("x = 2\n")
    patch = workspace_patch(repo, base)
    assert "-x = 1\n+x = 2" in patch and ".gitattributes" in patch
    assert not marker.exists()
