"""Run `OpenAIServer` as a process, for the CLI, the JSON-RPC runtime and demos.

```
python -m dsh.testing.openai_server --script FILE.json [--port 0] [--record FILE.jsonl]
```

The first stdout line is the base URL (point `DEEPSEEK_BASE_URL` at it); the server runs
until SIGINT/SIGTERM. The script is a JSON list; each entry is a string (a text reply) or:

- `{"parts": [PART, ...], "usage": {"inputTokens": …}, "finish": "max-tokens", "delay": 0.1,
  "piece_chars": 4, "hang": true}` where a PART is a string (text), `{"reasoning": "…"}`,
  `{"tool_call": {"name": "read", "arguments": {…} | "raw", "id": "call_x"}}`,
  `{"failure": {"code": "RATE_LIMIT", "message": "…", "status": 429, "retry_after_ms": 500}}`
  or `{"crash": "reason"}`;
- `{"http_error": {"status": 503, "message": "…", "code": "…", "retry_after": 1.5}}`;
- `{"malformed": {"parts": [PART, ...]}}`.

A key not named here is an error (one line on stderr, exit 2), not an empty reply.

`--record` appends one JSON line per request: `{n, t, path, headers, body}` (the
`authorization` header redacted).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..llm import Json, TokenUsage
from ._openai_server import OpenAIServer, RecordedRequest, ServerEntry
from ._openai_wire import http_error, malformed
from ._script import Part, crash, failure, reasoning, reply, tool_call

__all__ = ["load_server_script", "main"]


def _part(raw: Any, where: str) -> Part:
    if isinstance(raw, str):
        return raw
    if isinstance(raw, dict) and len(raw) == 1:
        ((kind, value),) = raw.items()
        if kind == "reasoning" and isinstance(value, str):
            return reasoning(value)
        if kind == "tool_call" and isinstance(value, dict):
            return tool_call(value["name"], value.get("arguments", "{}"), id=value.get("id"))
        if kind == "failure" and isinstance(value, dict):
            return failure(
                value["code"],
                value.get("message"),
                status=value.get("status"),
                retry_after_ms=value.get("retry_after_ms"),
            )
        if kind == "crash":
            return crash(str(value))
    raise ValueError(f"{where}: not a reply part: {raw!r}")


_REPLY_KEYS = frozenset({"parts", "usage", "finish", "delay", "piece_chars", "hang"})


def _entry(raw: Any, where: str) -> ServerEntry:
    if isinstance(raw, str):
        return raw
    if not isinstance(raw, dict):
        raise ValueError(f"{where}: a script entry is a string or an object, not {raw!r}")
    if "http_error" in raw:
        spec = raw["http_error"]
        return http_error(
            spec["status"],
            spec.get("message"),
            code=spec.get("code"),
            retry_after=spec.get("retry_after"),
        )
    if "malformed" in raw:
        parts = raw["malformed"].get("parts", [])
        return malformed(*[_part(p, f"{where}.malformed.parts[{i}]") for i, p in enumerate(parts)])  # type: ignore[arg-type]
    unknown = sorted(set(raw) - _REPLY_KEYS)
    if unknown:  # a mistyped entry would otherwise be an empty reply
        raise ValueError(
            f"{where}: unknown key {unknown[0]!r} (an entry takes {', '.join(sorted(_REPLY_KEYS))}"
            ", or http_error, or malformed)"
        )
    parts = [_part(p, f"{where}.parts[{i}]") for i, p in enumerate(raw.get("parts", []))]
    usage = raw.get("usage")
    return reply(
        *parts,
        usage=None if usage is None else TokenUsage.from_json(usage),
        finish=raw.get("finish"),
        delay=float(raw.get("delay", 0.0)),
        hang=bool(raw.get("hang", False)),
        piece_chars=raw.get("piece_chars"),
    )


def load_server_script(source: str | Path | Sequence[Json]) -> list[ServerEntry]:
    """Script entries from a JSON file path or an already parsed list."""
    data = json.loads(Path(source).read_text()) if isinstance(source, str | Path) else source
    if not isinstance(data, list):
        raise ValueError("a server script is a JSON list of entries")
    return [_entry(raw, f"script[{i}]") for i, raw in enumerate(data)]


def _recorder(path: Path) -> Any:
    counter = iter(range(1, sys.maxsize))

    def record(request: RecordedRequest) -> None:
        headers = dict(request.headers)
        if "authorization" in headers:
            headers["authorization"] = "<redacted>"
        line = {"n": next(counter), "t": time.time(), "path": request.path}
        line |= {"headers": headers, "body": request.body}
        with path.open("a", encoding="utf-8") as out:
            out.write(json.dumps(line) + "\n")

    return record


async def _serve(args: argparse.Namespace, entries: list[ServerEntry]) -> None:
    server = OpenAIServer(entries, host=args.host, port=args.port)
    if args.record:
        server.on_request = _recorder(Path(args.record))
    await server.start()
    print(server.base_url, flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    try:
        await stop.wait()
    finally:
        await server.close()


def main(argv: Sequence[str] | None = None) -> int:
    doc = __doc__ or ""  # (None under python -OO)
    script = doc[doc.find("The first stdout line") :] if "The first stdout" in doc else None
    parser = argparse.ArgumentParser(
        prog="python -m dsh.testing.openai_server",
        description="A loopback Chat Completions / Messages API server playing a script.",
        epilog=script,  # the script format, as the module's docstring states it
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--script", help="a JSON script file (default: empty)")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    parser.add_argument("--record", help="append each request as a JSON line to this file")
    args = parser.parse_args(argv)
    try:
        entries = load_server_script(Path(args.script)) if args.script else []
    except (OSError, ValueError) as exc:
        print(f"openai_server: {args.script}: {exc}", file=sys.stderr)
        return 2
    asyncio.run(_serve(args, entries))
    return 0


if __name__ == "__main__":
    sys.exit(main())
