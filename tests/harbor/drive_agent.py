"""Run by the test with the Python of a venv that has Harbor (not collected by pytest).

Drives `dsh.harbor:DshAgent` as Harbor's trial does — import by path, setup (install
skipped: the `dsh` on PATH is this checkout), run, then `populate_context_post_run` on an
empty context — against `LocalEnvironment`, a Harbor `BaseEnvironment` whose commands run
in a folder on this machine. The agent's logs folder is the same path on both sides, as
with Harbor's Docker mount of `/logs/agent`. Prints one JSON object for the test to check.

    python drive_agent.py CONFIG.json
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sys
from pathlib import Path, PurePosixPath
from typing import Any

from harbor.environments.base import BaseEnvironment, ExecResult
from harbor.models.agent.context import AgentContext
from harbor.models.task.config import EnvironmentConfig, MCPServerConfig
from harbor.models.trajectories import Trajectory
from harbor.models.trial.paths import TrialPaths
from harbor.utils.import_path import import_class


class LocalEnvironment(BaseEnvironment):
    """Commands run with bash in `workspace` on this machine (every `user` is this one)."""

    def __init__(self, workspace: Path, trial_dir: Path, base_env: dict[str, str]) -> None:
        self.workspace = workspace
        self.base_env = base_env
        self.commands: list[dict[str, Any]] = []
        super().__init__(
            environment_dir=workspace,
            environment_name="local",
            session_id="local__env",
            trial_paths=TrialPaths(trial_dir),
            task_env_config=EnvironmentConfig(),
        )

    @staticmethod
    def type() -> str:
        return "local-folder"

    def _validate_definition(self) -> None:
        pass

    async def start(self, force_build: bool) -> None:
        self.workspace.mkdir(parents=True, exist_ok=True)

    async def stop(self, delete: bool) -> None:
        pass

    def _local(self, path: str) -> Path:
        return Path(path) if Path(path).is_absolute() else self.workspace / path

    async def upload_file(self, source_path: Path | str, target_path: str) -> None:
        self._local(target_path).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source_path, self._local(target_path))

    async def upload_dir(self, source_dir: Path | str, target_dir: str) -> None:
        shutil.copytree(source_dir, self._local(target_dir), dirs_exist_ok=True)

    async def download_file(self, source_path: str, target_path: Path | str) -> None:
        shutil.copyfile(self._local(source_path), target_path)

    async def download_dir(self, source_dir: str, target_dir: Path | str) -> None:
        shutil.copytree(self._local(source_dir), target_dir, dirs_exist_ok=True)

    async def exec(
        self,
        command: str,
        cwd: str | None = None,
        env: dict[str, str] | None = None,
        timeout_sec: int | None = None,
        user: str | int | None = None,
    ) -> ExecResult:
        merged = {**self.base_env, **(self._merge_env(env) or {})}
        self.commands.append({"command": command, "user": user, "env": sorted(env or {})})
        process = await asyncio.create_subprocess_exec(
            "bash",
            "-c",
            command,
            cwd=cwd or self.workspace,
            env=merged,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        out, err = await asyncio.wait_for(process.communicate(), timeout_sec or 120)
        return ExecResult(
            stdout=out.decode(errors="replace"),
            stderr=err.decode(errors="replace"),
            return_code=process.returncode or 0,
        )


async def drive(config: dict[str, Any]) -> dict[str, Any]:
    agent_class = import_class(config["import_path"], label="agent")
    workspace, trial = Path(config["workspace"]), Path(config["trial_dir"])
    logs_dir = trial / "agent"
    logs_dir.mkdir(parents=True, exist_ok=True)
    environment = LocalEnvironment(workspace, trial, config["env"])
    await environment.start(force_build=False)
    agent = agent_class(
        logs_dir=logs_dir,
        model_name=config["model"],
        environment_logs_dir=PurePosixPath(logs_dir),
        skip_install=True,
        mcp_servers=[MCPServerConfig(**server) for server in config["mcp_servers"]],
    )
    await agent.setup(environment)
    context = AgentContext()
    await agent.run(config["instruction"], environment, context)
    assert context.is_empty()  # Harbor fills it after the logs are synced: as the trial does
    agent.populate_context_post_run(context)
    trajectory_file = logs_dir / "trajectory.json"
    trajectory = Trajectory.model_validate_json(trajectory_file.read_text())
    mcp_file = Path(config["env"]["HOME"]) / ".dsh" / "mcp.json"
    return {
        "import_path": agent_class.import_path(),
        "name": agent_class.name(),
        "atif": agent_class.capabilities.atif,
        "version": agent.version(),
        "context": context.model_dump(mode="json"),
        "trajectory": trajectory.to_json_dict(),
        "commands": environment.commands,
        "mcp_json": json.loads(mcp_file.read_text()) if mcp_file.exists() else None,
        "logs": sorted(str(p.relative_to(logs_dir)) for p in logs_dir.rglob("*") if p.is_file()),
    }


def main() -> None:
    config = json.loads(Path(sys.argv[1]).read_text())
    os.environ.update(config.get("harbor_env", {}))  # the Harbor process's own variables
    print(json.dumps(asyncio.run(drive(config))))


if __name__ == "__main__":
    main()
