"""The Harbor installed agent, built on first use: this module imports Harbor only when
`agent_class()` runs, i.e. inside the Harbor process (`import dsh.harbor` does not)."""

from __future__ import annotations

import base64
import functools
import shlex
import tempfile
from pathlib import Path, PurePosixPath

from ._commands import (
    FORWARDED_ENV,
    SESSIONS_DIR,
    dsh_model,
    install_script,
    mcp_file,
    run_command,
)
from ._results import read_figures, read_trajectory, session_of, with_subagents
from ._source import source_tree, stage_source

__all__ = ["INSTALL_ENV", "agent_class"]

INSTALL_ENV = "DSH_HARBOR_INSTALL"
"""What the agent installs: the path on the Harbor host of a wheel, sdist or source folder
(copied into the container), or a pip requirement (`git+https://…`). Default: the source
tree of the dsh the Harbor process runs (PyPI's `dsh` is another project)."""
UPLOAD_DIR = PurePosixPath("/installed-agent")


def _local_source(given: str | None, staging: Path) -> tuple[Path | None, str]:
    """(a file or folder of this host to copy into the container, the requirement to install):
    `given` when it is a pip requirement, else the wheel, sdist or source folder it names, else
    this dsh's own source tree. Source folders are staged under `staging` first."""
    path = Path(given).expanduser() if given else None
    if given and path is not None and not path.exists():
        return None, given  # a pip requirement (`dsh==…` of an index, `git+https://…`)
    if path is not None and path.is_file():
        return path.resolve(), ""
    root = path.resolve() if path is not None else source_tree()
    if root is None:
        raise RuntimeError(
            f"set {INSTALL_ENV} to a wheel or sdist of this dsh (`pip wheel --no-deps .` in a "
            "clone), a clone's folder, or a pip requirement (`git+https://…`): this dsh is not "
            "running from a source tree, and PyPI's `dsh` is another project"
        )
    return stage_source(root, staging), ""


@functools.cache
def agent_class() -> type[object]:
    """`DshAgent`, Harbor's `BaseInstalledAgent` for dsh (Harbor imported here)."""
    from harbor.agents.capabilities import AgentCapabilities
    from harbor.agents.installed.base import BaseInstalledAgent, with_prompt_template
    from harbor.environments.base import BaseEnvironment
    from harbor.models.agent.context import AgentContext
    from harbor.models.trajectories import Trajectory

    class DshAgent(BaseInstalledAgent):
        """dsh on a Harbor task: installed into the task's image, run headless with every
        tool call approved, its session logs kept in the agent's logs folder and exported as
        the trial's ATIF `trajectory.json`."""

        capabilities = AgentCapabilities(atif=True, mcp_servers=True)

        @staticmethod
        def name() -> str:
            return "dsh"

        def get_version_command(self) -> str | None:
            return "dsh --version"

        def parse_version(self, stdout: str) -> str:
            return stdout.strip().split()[-1] if stdout.strip() else stdout

        # -- setup ------------------------------------------------------------------------

        async def _requirement(self, environment: BaseEnvironment) -> str:
            given: str | None = self._get_env(INSTALL_ENV)
            extra = "[mcp]" if self.mcp_servers else ""
            with tempfile.TemporaryDirectory(prefix="dsh-harbor-") as staging:
                local, requirement = _local_source(given, Path(staging))
                if local is None:
                    return requirement
                target = str(UPLOAD_DIR / local.name)
                if local.is_dir():
                    await environment.upload_dir(local, target)
                else:
                    await environment.upload_file(local, target)
            return target + extra

        async def install(self, environment: BaseEnvironment) -> None:
            probe = await environment.exec(
                command=(
                    "command -v uv || for p in python3.13 python3.12 python3.11 python3; do "
                    "$p -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null "
                    "&& exit 0; done; exit 1"
                ),
                user="root",
            )
            if probe.return_code != 0:  # the script fetches uv, which brings a Python
                await self.ensure_system_dependencies(environment, ("curl", "ca_certificates"))
            requirement = await self._requirement(environment)
            await self.exec_as_root(environment, command=install_script(requirement))

        async def configure(self, environment: BaseEnvironment) -> None:
            """Harbor's MCP servers for the task go to the agent user's `~/.dsh/mcp.json`."""
            if not self.mcp_servers:
                return
            encoded = base64.b64encode(mcp_file(self.mcp_servers).encode()).decode()
            await self.exec_as_agent(
                environment,
                command=(
                    'home="${DSH_HOME:-$HOME/.dsh}" && mkdir -p "$home" && '
                    f'echo {encoded} | base64 -d > "$home/mcp.json" && '
                    'chmod 600 "$home/mcp.json"'
                ),
            )

        # -- the run ----------------------------------------------------------------------

        def _run_env(self) -> dict[str, str]:
            env = {name: value for name in FORWARDED_ENV if (value := self._get_env(name))}
            env["DSH_SESSION_ROOT"] = str(self.environment_logs_dir / SESSIONS_DIR)
            return env

        @with_prompt_template
        async def run(
            self, instruction: str, environment: BaseEnvironment, context: AgentContext
        ) -> None:
            model = dsh_model(self.model_name) if self.model_name else None
            logs = self.environment_logs_dir
            try:
                await self.exec_as_agent(
                    environment,
                    command=run_command(instruction, model, logs),
                    env=self._run_env(),
                )
            finally:
                # dsh keeps its logs readable by their owner only; Harbor reads them as
                # whoever runs it, after the container's user wrote them.
                sessions = shlex.quote(str(logs / SESSIONS_DIR))
                await environment.exec(
                    command=f"chmod -R a+rX {sessions} 2>/dev/null || true", user="root"
                )

        # -- results ----------------------------------------------------------------------

        def convert_trajectory(self, logs_dir: Path) -> Trajectory | None:
            trajectory = read_trajectory(logs_dir)
            return None if trajectory is None else Trajectory.model_validate(trajectory)

        def populate_context_post_run(self, context: AgentContext) -> None:
            figures = read_figures(self.logs_dir)
            trajectory = None
            try:
                trajectory = self.convert_trajectory(self.logs_dir)
            except Exception as exc:  # the figures still count without a trajectory
                self.logger.warning(f"dsh: no ATIF trajectory: {exc}")
            if trajectory is not None:
                from harbor.utils.trajectory_utils import format_trajectory_json

                path = self.logs_dir / "trajectory.json"
                path.write_text(format_trajectory_json(trajectory.to_json_dict()))
            if figures is not None:
                if trajectory is not None:
                    figures = with_subagents(figures, trajectory.to_json_dict())
                context.n_input_tokens = figures.n_input_tokens
                context.n_cache_tokens = figures.n_cache_tokens
                context.n_output_tokens = figures.n_output_tokens
                context.cost_usd = figures.cost_usd
                context.metadata = {
                    "dsh_session_id": figures.session_id,
                    "dsh_finish_reason": figures.finish_reason,
                }
            elif trajectory is not None and trajectory.final_metrics is not None:
                final = trajectory.final_metrics  # a run cut short: what its log holds
                context.n_input_tokens = final.total_prompt_tokens or 0
                context.n_cache_tokens = final.total_cached_tokens or 0
                context.n_output_tokens = final.total_completion_tokens or 0
                context.cost_usd = final.total_cost_usd
                context.metadata = {"dsh_session_id": session_of(self.logs_dir)}

    DshAgent.__module__ = "dsh.harbor"  # its import path: dsh.harbor:DshAgent
    DshAgent.__qualname__ = "DshAgent"
    return DshAgent
