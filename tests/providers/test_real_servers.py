"""Model calls behind the server software people put in front of a model: nginx as a
reverse proxy (streaming through it; its 413 and 502 pages) and squid as a forward proxy
that wants credentials (its 407, over plain HTTP and for a tunnel). Skipped, saying so,
where Debian's `nginx` or `squid` is not installed (`.ci/run` installs both)."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from dsh.llm.adapters import DeepSeekPlugin

from .conftest import Harness

SBIN = os.pathsep.join([os.environ.get("PATH", ""), "/usr/sbin", "/usr/local/sbin"])


def installed(name: str) -> str:
    found = shutil.which(name, path=SBIN)
    if found is None:
        pytest.skip(f"{name} is not installed (apt-get install {name})")
    return found


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def started(command: list[str], ready: str) -> subprocess.Popen[str]:
    """`command`, once its stderr has said `ready` (it listens by then)."""
    process = subprocess.Popen(command, stderr=subprocess.PIPE, text=True)
    assert process.stderr is not None
    seen = []
    for line in process.stderr:
        seen.append(line)
        if ready in line:
            return process
    raise AssertionError(f"{command[0]} did not start: {''.join(seen)}")


def stopped(process: subprocess.Popen[str]) -> None:
    """Stop `process`; what it said after starting is printed (shown when a test fails)."""
    process.terminate()
    assert process.stderr is not None
    print(process.stderr.read())
    process.wait(timeout=30)
    process.stderr.close()


NGINX = """\
daemon off;
master_process off;
pid {tmp}/nginx.pid;
error_log stderr notice;
events {{ worker_connections 64; }}
http {{
  access_log off;
  client_body_temp_path {tmp}/body;
  proxy_temp_path {tmp}/proxy;
  fastcgi_temp_path {tmp}/fastcgi;
  uwsgi_temp_path {tmp}/uwsgi;
  scgi_temp_path {tmp}/scgi;
  server {{
    listen 127.0.0.1:{port};
    location /ok/ {{ proxy_pass {upstream}/; proxy_buffering off; proxy_http_version 1.1; }}
    location /small/ {{ client_max_body_size 10; proxy_pass {upstream}/; }}
    location /down/ {{ proxy_pass http://127.0.0.1:{closed}/; }}
  }}
}}
"""


@pytest.fixture
def nginx(tmp_path: Path, harness: Harness) -> Iterator[str]:
    """nginx in front of the harness's model server: its base URL (`/ok`, `/small`, `/down`)."""
    binary = installed("nginx")
    port, closed = free_port(), free_port()
    config = tmp_path / "nginx.conf"
    upstream = harness.server.base_url
    config.write_text(NGINX.format(tmp=tmp_path, port=port, upstream=upstream, closed=closed))
    # Its version line comes after the listening sockets are open.
    process = started([binary, "-c", str(config), "-e", "stderr"], "getrlimit(RLIMIT_NOFILE)")
    yield f"http://127.0.0.1:{port}"
    stopped(process)


async def test_a_stream_through_nginx_arrives_whole(harness: Harness, nginx: str) -> None:
    harness.server.add("Hello through nginx.")
    await harness.mount(base_url=f"{nginx}/ok")
    call = await harness.call()
    assert call.failure_code is None
    assert "".join(getattr(c, "text", "") for c in call.chunks) == "Hello through nginx."


@pytest.mark.parametrize(
    ("where", "status", "title", "code"),
    [
        ("small", 413, "413 Request Entity Too Large", "INVALID_REQUEST"),
        ("down", 502, "502 Bad Gateway", "SERVER"),
    ],
)
async def test_nginx_error_pages_are_their_title(
    harness: Harness, nginx: str, where: str, status: int, title: str, code: str
) -> None:
    await harness.mount(base_url=f"{nginx}/{where}")
    call = await harness.call()
    failure = call.assembler.finish.failure
    assert failure is not None and failure.code == code
    assert failure.message.startswith(f"deepseek-official: HTTP {status}: {title}")
    assert "<" not in failure.message and harness.server.requests == []


SQUID = """\
http_port 127.0.0.1:{port}
pid_filename {tmp}/squid.pid
cache_log /dev/stderr
access_log none
cache deny all
cache_mem 8 MB
auth_param basic program {helper} {tmp}/passwd
auth_param basic children 1
acl authenticated proxy_auth REQUIRED
http_access allow authenticated
http_access deny all
shutdown_lifetime 0 seconds
"""


@pytest.fixture
def squid() -> Iterator[int]:
    """squid wanting credentials nobody has (an empty password file): its port."""
    binary = installed("squid")
    helper = Path("/usr/lib/squid/basic_ncsa_auth")
    if not helper.is_file():
        pytest.skip(f"{helper} is not installed (apt-get install squid)")
    # Run as root, squid's helpers run as the `proxy` user: their files must be reachable by
    # it, so not under pytest's own (private) temporary folders.
    with tempfile.TemporaryDirectory(prefix="dsh-squid-") as name:
        folder = Path(name)
        folder.chmod(0o755)
        (folder / "passwd").write_text("")
        port = free_port()
        config = folder / "squid.conf"
        config.write_text(SQUID.format(port=port, tmp=folder, helper=helper))
        # A service name of its own: squids of one name share memory segments and pid files,
        # so one started elsewhere on the machine must not stop this one.
        name = f"dsh{os.getpid()}{port}"
        command = [binary, "-N", "-d", "1", "-n", name, "-f", str(config)]
        process = started(command, "Accepting HTTP Socket")
        yield port
        stopped(process)


@pytest.mark.parametrize("scheme", ["http", "https"])
async def test_a_proxy_wanting_credentials_ends_the_call_once_saying_so(
    harness: Harness, squid: int, scheme: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(
        "HTTP_PROXY" if scheme == "http" else "HTTPS_PROXY", f"http://127.0.0.1:{squid}"
    )
    await harness.ctx.plugin(DeepSeekPlugin, {"base_url": f"{scheme}://api.example.test"})
    call = await harness.call()
    failure = call.assembler.finish.failure
    assert failure is not None and failure.code == "INVALID_REQUEST"  # not retried
    assert "407" in failure.message and "<" not in failure.message
    assert "the proxy wants credentials" in failure.message
