"""`ScriptedModel`: an `LlmAdapter` that plays a script of replies, one per request."""

from __future__ import annotations

import asyncio
import itertools
from collections import deque
from collections.abc import AsyncIterator, Iterable, Sequence
from typing import TYPE_CHECKING

from ..kernel import Aborted
from ..llm import (
    Finish,
    GenerateOptions,
    LlmFailure,
    ModelInfo,
    ProviderInfo,
    RetryPolicy,
    StreamChunk,
    aborted_finish,
    error_finish,
)
from ._script import Crash, Entry, Hold, Reply, reply

if TYPE_CHECKING:
    from .._context import Context
    from ..kernel import CancelSignal
    from ..llm import AdapterRegistration

__all__ = ["ScriptedModel"]


class ScriptedModel:
    """A model for tests and demos: each `stream()` call plays the next script entry.

    ```python
    model = ScriptedModel([
        reply(tool_call("read", {"path": "a"})),
        reply(reasoning("the file says hi"), "It says hi.", usage=TokenUsage(10, 5)),
    ])
    model.install(ctx)                # serves the "scripted" provider route
    ...
    model.assert_complete()           # every entry played, every expectation met
    ```

    Entries are `reply(...)`s, plain strings (a text reply) or functions of the request
    returning either. Requests are recorded in `requests`. Running past the end of the
    script finishes the stream with `error` (code `SCRIPT_EXHAUSTED`).
    """

    def __init__(
        self,
        script: Iterable[Entry] = (),
        *,
        model: str = "scripted",
        name: str = "Scripted model",
        context_window: int | None = None,
        default_max_tokens: int | None = None,
        efforts: Sequence[str] = (),
        default_effort: str | None = None,
        input_modalities: Sequence[str] = ("text",),
        retry_policy: RetryPolicy | None = None,
    ) -> None:
        self._script: deque[Entry] = deque(script)
        self._call_ids = (f"call_{n}" for n in itertools.count(1))
        self._played = 0
        self.model = model
        self.name = name
        self.context_window = context_window
        self.default_max_tokens = default_max_tokens
        self.efforts = tuple(efforts)
        self.default_effort = default_effort
        self.input_modalities = tuple(input_modalities)
        self._retry_policy = retry_policy
        self.requests: list[GenerateOptions] = []
        self.mismatches: list[str] = []
        """Failed expectations and requests past the end of the script."""

    # -- the script ----------------------------------------------------------------------------

    def add(self, *entries: Entry) -> ScriptedModel:
        """Append entries to the script."""
        self._script.extend(entries)
        return self

    @property
    def remaining(self) -> int:
        return len(self._script)

    @property
    def last_request(self) -> GenerateOptions:
        if not self.requests:
            raise AssertionError("ScriptedModel received no request")
        return self.requests[-1]

    def assert_complete(self) -> None:
        """Raise `AssertionError` if entries remain or a request did not match the script."""
        problems = list(self.mismatches)
        if self._script:
            problems.append(
                f"{len(self._script)} script entr{'y' if len(self._script) == 1 else 'ies'} "
                f"not played ({self._played} played)"
            )
        if problems:
            raise AssertionError("ScriptedModel: " + "; ".join(problems))

    # -- mounting --------------------------------------------------------------------------------

    provider = "scripted"
    """The route it serves unless told otherwise (also under `dsh.Agent(model=...)`)."""

    def install(self, ctx: Context, provider: str | None = None) -> AdapterRegistration:
        """Serve `provider` (default `scripted`) through `ctx.llm`; owned by `ctx`'s owner."""
        return ctx.llm.register_adapter([provider or self.provider], self)

    def model_info(self, provider: str, model: str | None = None) -> ModelInfo:
        return ModelInfo(
            provider=provider,
            id=model or self.model,
            name=self.name if model is None or model == self.model else model,
            context_window=self.context_window,
            default_max_tokens=self.default_max_tokens,
            reasoning_efforts=self.efforts,
            default_effort=self.default_effort,
            input_modalities=self.input_modalities,
        )

    # -- the adapter protocol --------------------------------------------------------------------

    def provider_info(self, provider: str) -> ProviderInfo:
        return ProviderInfo(provider, self.name)

    def list_models(self, provider: str) -> list[ModelInfo]:
        return [self.model_info(provider)]

    async def resolve_model(self, provider: str, model: str) -> ModelInfo:
        # A scripted model answers to any model id, with the same capabilities.
        return self.model_info(provider, model)

    def retry_policy(self, provider: str) -> RetryPolicy | None:
        return self._retry_policy

    async def stream(self, options: GenerateOptions) -> AsyncIterator[StreamChunk]:
        self.requests.append(options)
        number = len(self.requests)
        signal = options.signal
        if not self._script:
            message = f"request #{number} is past the end of the script ({self._played} entries)"
            self.mismatches.append(message)
            yield Finish(error_finish(LlmFailure(f"ScriptedModel: {message}", "SCRIPT_EXHAUSTED")))
            return
        entry = self._script.popleft()
        self._played += 1
        try:
            current = self._resolve(entry, options)
            problem = self._check(current, options)
        except Exception as exc:
            problem = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        if problem is not None:
            message = f"request #{number} did not match the script: {problem}"
            self.mismatches.append(message)
            failure = LlmFailure(f"ScriptedModel: {message}", "SCRIPT_EXPECTATION")
            yield Finish(error_finish(failure))
            return
        body, tail = current.render(self._call_ids)
        for item in body:
            if isinstance(item, Hold):
                if not await _held(item, signal):
                    yield Finish(aborted_finish())
                    return
                continue
            if not await _pause(current.delay, signal):
                yield Finish(aborted_finish())
                return
            if isinstance(item, Crash):
                raise item.error
            yield item
        if current.hang:
            await _until_aborted(signal)
            yield Finish(aborted_finish())
            return
        for chunk in tail:
            if not await _pause(current.delay, signal):
                yield Finish(aborted_finish())
                return
            yield chunk

    @staticmethod
    def _resolve(entry: Entry, options: GenerateOptions) -> Reply:
        if callable(entry) and not isinstance(entry, Reply):
            entry = entry(options)
        if isinstance(entry, str):
            return reply(entry)
        if not isinstance(entry, Reply):
            raise TypeError(f"a script entry must give a reply(...) or a str, not {entry!r}")
        return entry

    @staticmethod
    def _check(current: Reply, options: GenerateOptions) -> str | None:
        if current.expect is None:
            return None
        if current.expect(options) is False:
            return "expect(...) returned False"
        return None

    def __repr__(self) -> str:
        return f"<ScriptedModel played={self._played} remaining={len(self._script)}>"


async def _pause(seconds: float, signal: CancelSignal | None) -> bool:
    """Sleep `seconds` unless `signal` fires first; False if it fired."""
    if signal is not None:
        return await signal.sleep(seconds)
    if seconds > 0:
        await asyncio.sleep(seconds)
    return True


async def _held(point: Hold, signal: CancelSignal | None) -> bool:
    """Wait at `point` until it is released; False if `signal` fired first."""
    if signal is None:
        await point._pass()
        return True
    try:
        await signal.race(point._pass())
    except Aborted:
        return False
    return True


async def _until_aborted(signal: CancelSignal | None) -> None:
    if signal is None:
        await asyncio.get_running_loop().create_future()  # hangs until the task is cancelled
    else:
        await signal.wait()
