"""SWE-bench instances in, a predictions file out: a batch task per instance, and each
workspace's `git diff` against the instance's base commit as its `model_patch`."""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from collections.abc import Iterable
from pathlib import Path

import msgspec

from ._tasks import BatchError, Task, TaskResult, check_unique

__all__ = [
    "SWEBENCH_PROMPT",
    "Prediction",
    "SweBenchInstance",
    "read_instances",
    "workspace_patch",
    "write_predictions",
]

SWEBENCH_PROMPT = (
    "Resolve the issue below in the repository in the current folder by editing its files. "
    "Do not commit, and do not change its tests unless the issue asks for it.\n\n"
    "<issue>\n{problem_statement}\n</issue>"
)
"""A SWE-bench task's prompt: the instance's problem statement, framed (~35 tokens)."""


class SweBenchInstance(msgspec.Struct, frozen=True):
    """One SWE-bench instance, with the official dataset's field names (its other fields,
    `patch`, `test_patch`, `FAIL_TO_PASS`…, are read past), and `repo_path`: the local
    checkout of `repo` at `base_commit` where the agent works."""

    instance_id: str
    problem_statement: str
    repo: str
    base_commit: str
    repo_path: str

    def task(self) -> Task:
        prompt = SWEBENCH_PROMPT.format(problem_statement=self.problem_statement)
        return Task(id=self.instance_id, prompt=prompt, cwd=self.repo_path)


class Prediction(msgspec.Struct, frozen=True):
    """One line of a SWE-bench predictions file (`swebench.harness.run_evaluation` reads it)."""

    instance_id: str
    model_name_or_path: str
    model_patch: str


_REQUIRED = ("instance_id", "problem_statement", "repo", "base_commit")


def read_instances(
    path: str | os.PathLike[str], *, repos: str | os.PathLike[str] | None = None
) -> list[SweBenchInstance]:
    """The instances of a JSONL file (blank lines skipped). An instance's checkout is its
    `repo_path` (relative to the file), else `repos/<instance_id>`; it must be a git work
    tree that has `base_commit`. Any problem is a `BatchError` naming the line."""
    source = Path(path)
    try:
        lines = source.read_text(encoding="utf-8-sig").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise BatchError(f"{source}: cannot read the instances file: {exc}") from None
    instances = []
    for number, line in enumerate(lines, 1):
        if line.strip():
            instances.append(_instance(line, f"{source}:{number}", source.parent, repos))
    check_unique((i.task() for i in instances), str(source))
    return instances


def _instance(
    line: str, where: str, folder: Path, repos: str | os.PathLike[str] | None
) -> SweBenchInstance:
    try:
        data = json.loads(line)
    except ValueError as exc:
        raise BatchError(f"{where}: invalid JSON ({exc})") from None
    if not isinstance(data, dict):
        raise BatchError(f"{where}: a JSON object is expected")
    for key in _REQUIRED:
        if not isinstance(data.get(key), str) or not data[key]:
            raise BatchError(f"{where}: {key}: required, a non-empty string")
    given = data.get("repo_path")
    if given is None and repos is None:
        raise BatchError(f"{where}: repo_path: not given (or pass the folder of the checkouts)")
    if given:
        checkout = folder / Path(given).expanduser()
    else:
        checkout = Path(repos or ".") / data["instance_id"]
    instance = SweBenchInstance(
        data["instance_id"],
        data["problem_statement"],
        data["repo"],
        data["base_commit"],
        str(checkout.resolve()),
    )
    _check_checkout(instance, where)
    return instance


def _check_checkout(instance: SweBenchInstance, where: str) -> None:
    if not Path(instance.repo_path).is_dir():
        raise BatchError(f"{where}: repo_path: {instance.repo_path} is not a folder")
    inside = _git(instance.repo_path, "rev-parse", "--is-inside-work-tree")
    if inside.returncode != 0 or inside.stdout.strip() != "true":
        raise BatchError(
            f"{where}: repo_path: {instance.repo_path} is not a git work tree (clone "
            f"{instance.repo} there and check out {instance.base_commit})"
        )
    found = _git(instance.repo_path, "cat-file", "-e", f"{instance.base_commit}^{{commit}}")
    if found.returncode != 0:
        raise BatchError(
            f"{where}: base_commit: {instance.base_commit} is not a commit of the git "
            f"repository at {instance.repo_path} (clone {instance.repo} there and check it out)"
        )


def workspace_patch(repo_path: str | os.PathLike[str], base_commit: str) -> str:
    """The work tree of `repo_path` as a diff against `base_commit`: edits, deletions and new
    files (those git does not ignore), committed or not. Nothing of the checkout's own git
    setup is used but its objects: the agent could write `.git/config` (a `core.fsmonitor`,
    a filter, an external diff would run here, outside any sandbox), so the new files are
    staged in a scratch repository of ours that borrows the checkout's objects."""
    objects = _git(repo_path, "rev-parse", "--git-path", "objects", env=_isolated(None))
    if objects.returncode != 0:
        raise BatchError(f"{repo_path}: git rev-parse failed: {objects.stderr.strip()}")
    borrowed = Path(repo_path, objects.stdout.strip()).resolve()
    with tempfile.TemporaryDirectory(prefix="dsh-swebench-") as scratch:
        git_dir = Path(scratch, "git")
        made = _git(scratch, "init", "--bare", "-q", str(git_dir), env=_isolated(None))
        if made.returncode != 0:
            raise BatchError(f"{repo_path}: git init failed: {made.stderr.strip()}")
        (git_dir / "objects" / "info" / "alternates").write_text(f"{borrowed}\n")
        env = _isolated(git_dir) | {
            "GIT_WORK_TREE": str(Path(repo_path).resolve()),
            "GIT_INDEX_FILE": str(Path(scratch, "index")),
        }
        for args in (("read-tree", base_commit), ("add", "-A")):
            step = _git(repo_path, *args, env=env)
            if step.returncode != 0:
                raise BatchError(f"{repo_path}: git {args[0]} failed: {step.stderr.strip()}")
        diff = _git(
            repo_path,
            "diff",
            "--cached",
            "--no-color",
            "--no-ext-diff",
            "--no-textconv",
            base_commit,
            env=env,
        )
    if diff.returncode != 0:
        raise BatchError(f"{repo_path}: git diff failed: {diff.stderr.strip()}")
    return diff.stdout


def _isolated(git_dir: Path | None) -> dict[str, str]:
    """An environment in which git reads no system, global or user configuration."""
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "HOME": os.devnull,
        "LC_ALL": "C",
        "GIT_TERMINAL_PROMPT": "0",
    }
    if git_dir is not None:
        env["GIT_DIR"] = str(git_dir)
    return env


def write_predictions(
    path: str | os.PathLike[str],
    instances: Iterable[SweBenchInstance],
    results: Iterable[TaskResult],
    *,
    model_name: str,
) -> list[Prediction]:
    """Write (replace) the predictions file: one line per instance that has a result, in
    instance order, its `model_patch` read from its checkout now (empty when nothing changed)."""
    ran = {r.id for r in results}
    predictions = [
        Prediction(i.instance_id, model_name, workspace_patch(i.repo_path, i.base_commit))
        for i in instances
        if i.instance_id in ran
    ]
    target = Path(path)
    try:
        with target.open("w", encoding="utf-8") as out:
            for prediction in predictions:
                out.write(json.dumps(msgspec.to_builtins(prediction), ensure_ascii=False) + "\n")
    except OSError as exc:
        raise BatchError(f"{target}: cannot write the predictions file: {exc.strerror}") from None
    return predictions


def _git(
    cwd: str | os.PathLike[str], *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["git", *args], cwd=cwd, env=env, capture_output=True, text=True, check=False
    )
