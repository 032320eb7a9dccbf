"""Types reach users: a program using the facade passes `mypy --strict` with dsh installed, and
the mistakes a user could make (a wrong output type, a listener whose signature does not fit
the event's dispatch mode) are reported."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

GOOD = '''
import asyncio

from pydantic import BaseModel

import dsh
from dsh.agent import PRE_STEP, REQUEST, StepPoint
from dsh.events import StreamEvent, TextDeltaEvent, TurnStartEvent
from dsh.kernel import Next
from dsh import Context
from dsh.llm import LlmCallConfig
from dsh.session import SESSION_EVENT, SESSION_FLUSH, Session, SessionEventPayload


@dsh.tool
def word_count(text: str) -> int:
    """Count the words in a text."""
    return len(text.split())


class City(BaseModel):
    name: str


async def approve(request: dsh.ApprovalRequest) -> dsh.Decision:
    return dsh.Decision.deny("not today") if request.tool == "bash" else dsh.Decision.once()


agent = dsh.Agent(
    "openai:qwen2.5-coder",
    base_url="http://localhost:8000/v1",
    tools=[word_count],
    instructions="Be terse.",
    settings=dsh.ModelSettings(temperature=0.2),
    approval=approve,
    store=dsh.SqliteStore("sessions.db"),
)
result = agent.run_sync("How many words are in 'one two three'?")
answer: str = result.output
usage: dsh.Usage = result.usage
city: City = dsh.Agent("anthropic:claude-x", output_type=City).run_sync("?").output


async def main() -> None:
    async with agent.run_stream("Write a haiku about logs.", session=result.session_id) as run:
        async for delta in run.text():
            print(delta, end="", flush=True)
        events: list[StreamEvent] = [e async for e in run.events()]
        print([e.text for e in events if isinstance(e, TextDeltaEvent)])
    final: str = run.result.output
    print(final, answer, usage, city)


def on_event(payload: SessionEventPayload) -> None:
    print(payload.event.seq)


async def on_flush(session: Session) -> None:
    print(session.id)


async def before_step(point: StepPoint) -> None:
    print(point.step)


async def sampling(point: StepPoint, next: Next[StepPoint, LlmCallConfig]) -> LlmCallConfig:
    return await next()


def listen(ctx: Context) -> None:
    ctx.on(SESSION_EVENT, on_event)
    ctx.on(SESSION_FLUSH, on_flush)
    ctx.on(PRE_STEP, before_step)
    ctx.on(REQUEST, sampling)


built = TextDeltaEvent(turn=1, step=1, index=0, text="x")
print(built.to_data(), TurnStartEvent(turn=1).seq)
asyncio.run(main())
'''

BAD = """
import dsh
from dsh.agent import REQUEST, TURN_STOPPING, StepPoint, TurnStopping
from dsh.events import TurnStartEvent
from dsh.kernel import Next
from dsh import Context
from dsh.llm import LlmCallConfig
from dsh.session import SESSION_EVENT

number: int = dsh.Agent("openai:qwen").run_sync("hi").output  # error
start = TurnStartEvent()  # error


def on_event(payload: int) -> None: ...


async def middleware(point: StepPoint, next: Next[StepPoint, LlmCallConfig]) -> str:
    return "not a config"


def not_a_waterfall(payload: TurnStopping) -> None: ...


def listen(ctx: Context) -> None:
    ctx.on(SESSION_EVENT, on_event)  # error
    ctx.on(REQUEST, middleware)  # error
    ctx.on(TURN_STOPPING, not_a_waterfall)  # error
"""


def test_the_facade_type_checks_and_mistakes_are_reported(tmp_path: Path) -> None:
    good, bad = tmp_path / "good.py", tmp_path / "bad.py"
    good.write_text(GOOD)
    bad.write_text(BAD)
    command = [sys.executable, "-m", "mypy", "--strict", "--no-error-summary"]
    command += ["--cache-dir", str(tmp_path / "cache"), str(good), str(bad)]
    done = subprocess.run(command, capture_output=True, text=True, cwd=tmp_path, timeout=300)
    reported = {
        (Path(line.split(":")[0]).name, int(line.split(":")[1]))
        for line in done.stdout.splitlines()
        if ": error:" in line
    }
    expected = {
        ("bad.py", number)
        for number, line in enumerate(BAD.splitlines(), start=1)
        if line.endswith("# error")
    }
    assert reported == expected, done.stdout + done.stderr
