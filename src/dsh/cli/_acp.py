"""`dsh acp`: the Agent Client Protocol on stdin/stdout, for editors (`dsh.acp`)."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import BinaryIO

from ..agent import AgentOptions
from ..assembly import RuntimeSpec, start
from ._runtime import CliError, assembled, layers


def _frames_only_stdout() -> BinaryIO:
    """The protocol's own handle on stdout; file descriptor 1 then points at stderr, so
    nothing else the process (or a library) prints can corrupt a frame."""
    frames = os.fdopen(os.dup(1), "wb", buffering=0)
    sys.stdout.flush()
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return frames


async def serve_acp(
    profile: list[Path] | None,
    model: str | None,
    base_url: str | None,
    provider: str | None,
    max_turn_requests: int | None,
) -> int:
    try:
        from ..acp import AcpSettings, serve
    except ImportError as exc:
        raise CliError(str(exc)) from None
    # A missing key does not stop the agent: ACP answers `session/new` "auth required".
    assembly = assembled(
        RuntimeSpec(
            files=layers(profile),
            local_profile=True,
            model=model,
            provider=provider,
            base_url=base_url,
            require_key=False,
        )
    )
    route = assembly.route
    assert route is not None
    stdout = _frames_only_stdout()
    ctx = await start(assembly)
    settings = AcpSettings(
        AgentOptions(provider=route.provider, model=route.model),
        route.route.api_key_env,
        max_turn_requests,
    )
    return await serve(ctx, settings, sys.stdin.buffer, stdout)
