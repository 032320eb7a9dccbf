"""What the Harbor agent runs in a task's container, as text: the install script, the run
command, the MCP servers file, the model name. Plain Python (no Harbor), so it is typed and
tested with the rest of dsh."""

from __future__ import annotations

import json
import shlex
from collections.abc import Mapping, Sequence
from pathlib import PurePosixPath
from typing import Any, Protocol

__all__ = [
    "FORWARDED_ENV",
    "INSTALL_PREFIX",
    "STDOUT_FILE",
    "McpServer",
    "dsh_model",
    "install_script",
    "mcp_file",
    "run_command",
]

INSTALL_PREFIX = "/opt/dsh"
"""The virtual environment dsh is installed into; `dsh` is linked into `/usr/local/bin`."""
STDOUT_FILE = "dsh.jsonl"
"""The run's `stream-json` output, in the agent's logs folder."""
STDERR_FILE = "dsh.stderr.txt"
SESSIONS_DIR = "sessions"
"""The session logs (`DSH_SESSION_ROOT`), in the agent's logs folder."""

FORWARDED_ENV = (
    "DEEPSEEK_API_KEY",
    "DEEPSEEK_BASE_URL",
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_BASE_URL",
    "DSH_MODEL",
    "DSH_PROVIDER",
    "DSH_LOG_LEVEL",
    "HTTPS_PROXY",
    "HTTP_PROXY",
    "NO_PROXY",
)
"""Variables of the Harbor process that the run in the container gets, when set."""


def dsh_model(harbor_model: str) -> str:
    """Harbor's `provider/model` as dsh's `provider:model` (`deepseek/deepseek-v4-pro` →
    `deepseek:deepseek-v4-pro`); a name without a provider is a DeepSeek model id."""
    provider, slash, model = harbor_model.partition("/")
    if not slash:
        return harbor_model
    return f"{provider}:{model}"


# Finds a Python >= 3.11 (or uv) in an arbitrary image, makes a venv at the prefix, installs
# the requirement into it and links `dsh` onto the PATH. Without either, uv is fetched (it
# brings its own Python): the agent installs curl first in that case.
_INSTALL = r"""set -eu
prefix={prefix}
requirement={requirement}
python_ok() {{ "$1" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; }}
found=""
for candidate in python3.13 python3.12 python3.11 python3; do
  if command -v "$candidate" >/dev/null 2>&1 && python_ok "$candidate" \
      && "$candidate" -m venv --help >/dev/null 2>&1; then
    found=$(command -v "$candidate"); break
  fi
done
uv=$(command -v uv || true)
if [ -z "$found" ] && [ -z "$uv" ]; then
  curl -LsSf https://astral.sh/uv/install.sh | env UV_INSTALL_DIR={prefix}-uv sh
  uv={prefix}-uv/uv
fi
if [ -n "$found" ]; then
  "$found" -m venv "$prefix"
  "$prefix/bin/python" -m pip install --quiet --disable-pip-version-check "$requirement"
else
  "$uv" venv --python 3.12 "$prefix"
  "$uv" pip install --python "$prefix/bin/python" "$requirement"
fi
"$prefix/bin/python" -c 'import dsh.harbor'  # this dsh, not PyPI's project of that name
mkdir -p {bin_dir}
ln -sf "$prefix/bin/dsh" {bin_dir}/dsh
{bin_dir}/dsh --version
"""


def install_script(
    requirement: str, prefix: str = INSTALL_PREFIX, bin_dir: str = "/usr/local/bin"
) -> str:
    """The shell script (run as root) that installs `requirement` — a wheel, sdist or source
    folder already in the container, or a pip requirement — with a Python >= 3.11 into a venv
    at `prefix`, checks that it is this dsh, and links `dsh` into `bin_dir`."""
    return _INSTALL.format(
        prefix=shlex.quote(prefix),
        requirement=shlex.quote(requirement),
        bin_dir=shlex.quote(bin_dir),
    )


def run_command(instruction: str, model: str | None, logs_dir: PurePosixPath) -> str:
    """The shell command of one task: `dsh run` headless, every tool call approved and
    unsandboxed (the task's container is the sandbox), the task on stdin, its `stream-json`
    output copied to the logs folder (and stdout), its stderr to a file beside it. A failed
    run (`pipefail`, which Harbor sets) also puts the tail of that file on stderr, where
    Harbor's error patterns (rate limits, a bad key) look."""
    argv = ["dsh", "run", "--yes", "--sandbox", "danger-full-access"]
    argv += ["--output-format", "stream-json"]
    if model:
        argv += ["-m", model]
    argv.append("-")
    out, err = logs_dir / STDOUT_FILE, logs_dir / STDERR_FILE
    return (
        f"mkdir -p {shlex.quote(str(logs_dir))} || exit; "
        f"printf '%s' {shlex.quote(instruction)} | {shlex.join(argv)} "
        f"2>{shlex.quote(str(err))} | tee {shlex.quote(str(out))}; "
        f'status=$?; [ "$status" -eq 0 ] || tail -c 4000 {shlex.quote(str(err))} >&2; '
        'exit "$status"'
    )


class McpServer(Protocol):
    """What the agent reads of Harbor's `MCPServerConfig`."""

    @property
    def name(self) -> str: ...
    @property
    def transport(self) -> str: ...
    @property
    def url(self) -> str | None: ...
    @property
    def command(self) -> str | None: ...
    @property
    def args(self) -> Sequence[str]: ...
    @property
    def headers(self) -> Mapping[str, str]: ...


def mcp_file(servers: Sequence[McpServer]) -> str:
    """Harbor's MCP servers as an `mcp.json` (Claude Code's `mcpServers` shape, which dsh
    reads from `$DSH_HOME/mcp.json`); `${VAR}` in headers stays for dsh to expand."""
    entries: dict[str, Any] = {}
    for server in servers:
        if server.transport == "stdio":
            entries[server.name] = {"command": server.command, "args": list(server.args)}
            continue
        kind = "http" if server.transport == "streamable-http" else "sse"
        entry: dict[str, Any] = {"type": kind, "url": server.url}
        if server.headers:
            entry["headers"] = dict(server.headers)
        entries[server.name] = entry
    return json.dumps({"mcpServers": entries}, indent=2) + "\n"
