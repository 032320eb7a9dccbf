"""A program in a pseudo-terminal, seen the way a person sees it: through a terminal
emulator (pyte), including what scrolled off the top. Waits poll the emulator's screen,
bounded by a deadline; nothing sleeps."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pexpect
import pyte

from .support import CHILD_PYTHONPATH, DSH, cli_env, workspace

WAIT_S = 30.0


class Terminal:
    def __init__(
        self, argv: list[str], *, env: dict[str, str], cwd: Path, rows: int = 30, cols: int = 100
    ) -> None:
        self.screen = pyte.HistoryScreen(cols, rows, history=5000, ratio=0.5)
        # Answer the program's device-status queries (cursor position) as a terminal does.
        self.screen.write_process_input = self._reply
        self.stream = pyte.ByteStream(self.screen)
        self.child = pexpect.spawn(
            argv[0], argv[1:], env=env, cwd=str(cwd), dimensions=(rows, cols), timeout=WAIT_S
        )

    def _reply(self, data: str) -> None:
        self.child.send(data)

    # -- what is on the screen -----------------------------------------------------------------

    def lines(self) -> list[str]:
        """Every line a person could see: the scrollback, then the screen (right-trimmed)."""
        cols = self.screen.columns
        scrolled = [
            "".join(line[x].data for x in range(cols)).rstrip() for line in self.screen.history.top
        ]
        return scrolled + [row.rstrip() for row in self.screen.display]

    def text(self) -> str:
        return "\n".join(self.lines())

    def display(self) -> list[str]:
        """Only what is on the screen now."""
        return [row.rstrip() for row in self.screen.display]

    def cursor_line(self) -> str:
        return self.screen.display[self.screen.cursor.y].rstrip()

    # -- waiting -------------------------------------------------------------------------------

    def _pump(self, timeout: float) -> bool:
        """Feed what the program wrote within `timeout` into the emulator; False at EOF."""
        try:
            data = self.child.read_nonblocking(65536, timeout=timeout)
        except pexpect.TIMEOUT:
            return True
        except pexpect.EOF:
            return False
        self.stream.feed(data)
        return True

    def wait_for(self, what: str | Callable[[Terminal], bool], timeout: float = WAIT_S) -> Terminal:
        """Until `what` is on the screen (or the predicate holds), or fail showing it."""
        check = (lambda t: what in t.text()) if isinstance(what, str) else what
        deadline = time.monotonic() + timeout
        alive = True
        while not check(self):
            left = deadline - time.monotonic()
            if left <= 0 or not alive:
                raise AssertionError(f"not on the screen: {what!r}\n--- screen ---\n{self.text()}")
            alive = self._pump(min(left, 0.5))
        return self

    def wait_exit(self, timeout: float = WAIT_S) -> int:
        deadline = time.monotonic() + timeout
        while self._pump(max(0.01, deadline - time.monotonic())):
            if time.monotonic() > deadline:
                raise AssertionError(f"still running\n--- screen ---\n{self.text()}")
        self.child.close()
        status = self.child.exitstatus
        return status if status is not None else 128 + (self.child.signalstatus or 0)

    # -- typing --------------------------------------------------------------------------------

    def type(self, text: str) -> None:
        self.child.send(text)

    def enter(self, text: str = "") -> None:
        self.child.send(text + "\r")

    def ctrl(self, key: str) -> None:
        self.child.sendcontrol(key)

    def resize(self, rows: int, cols: int) -> None:
        self.screen.resize(rows, cols)
        self.child.setwinsize(rows, cols)

    def close(self) -> None:
        if self.child.isalive():
            self.child.terminate(force=True)


class ModelServer:
    """The loopback OpenAI-compatible server as a process, its requests recorded."""

    def __init__(self, tmp_path: Path, script: list[Any]) -> None:
        path = tmp_path / f"model-script-{id(self)}.json"
        path.write_text(json.dumps(script))
        self.record = tmp_path / f"model-requests-{id(self)}.jsonl"
        command = ["-m", "dsh.testing.openai_server", "--script", str(path)]
        self.process = subprocess.Popen(
            [sys.executable, *command, "--record", str(self.record)],
            stdout=subprocess.PIPE,
            text=True,
            env={"PYTHONPATH": CHILD_PYTHONPATH, "PATH": "/usr/bin:/bin"},
        )
        assert self.process.stdout is not None
        self.url = self.process.stdout.readline().strip()

    def requests(self) -> list[dict[str, Any]]:
        if not self.record.exists():
            return []
        return [json.loads(line) for line in self.record.read_text().splitlines()]

    def close(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=10)


@contextmanager
def model_server(tmp_path: Path, script: list[Any]) -> Iterator[ModelServer]:
    server = ModelServer(tmp_path, script)
    try:
        yield server
    finally:
        server.close()


# -- dsh chat -------------------------------------------------------------------------------

TOKEN = {"delay": 0.005, "piece_chars": 3}
"""A model typing three characters at a time."""
USAGE = {"inputTokens": 900, "outputTokens": 40, "cacheReadTokens": 2700}


def answer(*parts: Any, **extra: Any) -> dict[str, Any]:
    """A script entry streamed token by token."""
    return {"parts": list(parts), **TOKEN, **extra}


def tool_call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"tool_call": {"name": name, "arguments": arguments}}


def at_prompt(t: Terminal) -> bool:
    return t.cursor_line().startswith(">")


def exits_cleanly(t: Terminal) -> None:
    t.wait_for(at_prompt)
    t.ctrl("d")
    assert t.wait_exit() == 0


class Chats:
    """`dsh chat` processes against loopback model servers, closed at the end of a test."""

    def __init__(self, tmp_path: Path) -> None:
        self.tmp_path = tmp_path
        self.opened: list[Terminal] = []
        self.servers: list[ModelServer] = []

    def server(self, script: list[Any]) -> ModelServer:
        server = ModelServer(self.tmp_path, script)
        self.servers.append(server)
        return server

    def __call__(
        self, script: list[Any] | ModelServer, *args: str, rows: int = 30, cols: int = 100
    ) -> tuple[Terminal, ModelServer]:
        server = script if isinstance(script, ModelServer) else self.server(script)
        env = cli_env(self.tmp_path, DEEPSEEK_BASE_URL=server.url, DEEPSEEK_API_KEY="sk-test")
        env.pop("NO_COLOR")  # colours are part of what is tested
        env["TERM"] = "xterm-256color"
        argv = [sys.executable, *DSH, "chat", "--cwd", str(workspace(self.tmp_path)), *args]
        terminal = Terminal(argv, env=env, cwd=self.tmp_path, rows=rows, cols=cols)
        self.opened.append(terminal)
        return terminal.wait_for(at_prompt), server

    def close(self) -> None:
        for terminal in self.opened:
            terminal.close()
        for server in self.servers:
            server.close()
