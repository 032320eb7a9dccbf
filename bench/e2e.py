"""End to end: the entry points people run, as whole processes, against a loopback model.

One interleaved session. For each N in (1, 50, 200) and each repetition, three contenders
run as whole processes against a scripted Chat Completions server (its own process, zero
model latency) that asks for one `read` of a small file per step, then answers:

- `bare`: a plain httpx loop sending the same requests (the floor);
- `dsh run`: `dsh run --yes` with the default profile, JSONL persistence and checkpoints on;
- `jsonrpc`: `dsh-jsonrpc-agent` driven by `dsh.client.Harness` (the driver's process and
  the runtime's together).

Printed per contender (medians of the repetitions): wall (process start to exit), CPU (user +
system, children included), peak RSS (the largest process), the per-step gap the server
measures (from the end of one response to the next request: the client's own work, tool
included), first 10 and last 10 steps, notifications sent (jsonrpc), and ratios to the floor.
Targets: `dsh run` N=200 wall <= 1.5x the floor and N=1 <= floor + 0.4 s; gap <= 2x the
floor's, last 10 <= 1.2x first 10; peak RSS <= 50 MiB; the JSON-RPC gap <= 5 ms per step.

`python bench/e2e.py [--sizes 1,50,200] [--reps 3]` runs it all; the `--serve` / `--bare` /
`--jsonrpc` modes are its child processes (the bare mode imports httpx only).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SIZES = (1, 50, 200)
REPS = 3
MODEL = "deepseek-v4-flash"
KEY = "sk-bench"
HELLO = "hello\nfrom the\nbenchmark\n"
TASK = "Read hello.txt once per step until told to stop, then answer."
BIN = Path(sys.executable).parent
CONTENDERS = ("bare", "dsh run", "jsonrpc")

# -- the server process ----------------------------------------------------------------------


def serve(steps: int) -> None:
    """Play `steps` read calls and a final answer; print the URL, then at SIGTERM a JSON line:
    `{"times": [[arrival, response end], ...] (perf_counter seconds), "first": body}`."""
    import asyncio

    from dsh.llm import TokenUsage
    from dsh.testing import OpenAIServer, RecordedRequest, reply, tool_call

    # Usage on every response, as real providers send it (the context meter relies on it).
    def usage(step: int) -> TokenUsage:
        return TokenUsage(input_tokens=4000 + 60 * step, output_tokens=20)

    read = tool_call("read", {"file_path": "hello.txt"})
    script: list[Any] = [reply(read, usage=usage(n)) for n in range(steps)]
    script.append(reply("Done after the reads. " * 4, usage=usage(steps)))

    async def main() -> None:
        times: list[list[float]] = []
        tasks: set[asyncio.Future[None]] = set()
        server = OpenAIServer(script)

        def arrived(record: RecordedRequest) -> None:
            slot = [time.perf_counter(), 0.0]
            times.append(slot)

            async def ended() -> None:
                await record.gone.wait()
                slot[1] = time.perf_counter()

            tasks.add(asyncio.ensure_future(ended()))

        server.on_request = arrived
        await server.start()
        print(server.base_url, flush=True)
        stop = asyncio.Event()
        asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
        await stop.wait()
        await server.close()
        for task in tasks:
            task.cancel()
        first = server.requests[0].body if server.requests else None
        print(json.dumps({"times": times, "first": first}), flush=True)

    asyncio.run(main())


@dataclass
class Server:
    process: subprocess.Popen[str]
    url: str

    @staticmethod
    def start(steps: int) -> Server:
        process = subprocess.Popen(
            [sys.executable, __file__, "--serve", str(steps)],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert process.stdout is not None
        return Server(process, process.stdout.readline().strip())

    def stop(self) -> tuple[list[float], Any]:
        """Stop the server: the gap before each request after the first (ms), and the
        first request's body."""
        self.process.send_signal(signal.SIGTERM)
        out, _ = self.process.communicate(timeout=30)
        seen = json.loads(out.strip().splitlines()[-1])
        times = seen["times"]
        gaps = [(b[0] - a[1]) * 1e3 for a, b in itertools.pairwise(times)]
        return gaps, seen["first"]

    def env(self, workdir: Path) -> dict[str, str]:
        """The environment of a contender talking to this server."""
        return {
            **os.environ,
            "DEEPSEEK_BASE_URL": self.url,
            "DEEPSEEK_API_KEY": KEY,
            "DSH_SESSION_ROOT": str(workdir / "sessions"),
            "DSH_HOME": str(workdir / "home"),
            "DSH_MODEL": f"deepseek:{MODEL}",
        }


# -- the contenders --------------------------------------------------------------------------


def bare(url: str, shape_file: str) -> None:
    """The floor: the same requests from a plain httpx loop, the `read` done inline."""
    import httpx

    shape = json.loads(Path(shape_file).read_text())
    messages: list[Any] = [
        {"role": "system", "content": shape["system"]},
        {"role": "user", "content": TASK},
    ]
    body = {key: value for key, value in shape.items() if key not in ("system", "messages")}
    body["messages"] = messages
    with httpx.Client(timeout=httpx.Timeout(10, read=300)) as client:
        while True:
            calls: dict[int, dict[str, Any]] = {}
            text: list[str] = []
            headers = {"Authorization": f"Bearer {KEY}"}
            with client.stream("POST", url + "/chat/completions", json=body, headers=headers) as r:
                for line in r.iter_lines():
                    if not line.startswith("data: ") or line == "data: [DONE]":
                        continue
                    for choice in json.loads(line[6:]).get("choices") or ():
                        delta = choice.get("delta") or {}
                        text.append(delta.get("content") or "")
                        for call in delta.get("tool_calls") or ():
                            slot = calls.setdefault(call["index"], {"args": []})
                            slot.setdefault("id", call.get("id"))
                            function = call.get("function") or {}
                            slot["name"] = function.get("name") or slot.get("name")
                            slot["args"].append(function.get("arguments") or "")
            if not calls:
                sys.stdout.write("".join(text) + "\n")
                return
            wire = [
                {
                    "id": c["id"],
                    "type": "function",
                    "function": {"name": c["name"], "arguments": "".join(c["args"])},
                }
                for c in calls.values()
            ]
            messages.append({"role": "assistant", "content": "".join(text), "tool_calls": wire})
            for c in wire:
                path = json.loads(c["function"]["arguments"])["file_path"]
                content = Path(path).read_text()
                messages.append({"role": "tool", "tool_call_id": c["id"], "content": content})


def jsonrpc(cwd: str) -> None:
    """Drive `dsh-jsonrpc-agent` with `dsh.client`; print the notification count."""
    from dsh.client import Harness

    command = [str(BIN / "dsh-jsonrpc-agent")]
    with Harness(provider="deepseek-official", model=MODEL, cwd=cwd, command=command) as h:
        # A new session each run: a fixed id would resume the previous run's log, and each
        # run would start with the history of all before it.
        result = h.run(TASK, session_id=f"bench-{os.getpid()}")
    assert result.finish_reason == "completed", result.finish_reason
    print(json.dumps({"notifications": len(result.notifications)}))


@dataclass(frozen=True)
class Sample:
    wall: float
    cpu: float
    rss_mib: float
    gaps: list[float]
    notifications: int | None


def measure(contender: str, steps: int, workdir: Path, shape_file: Path) -> Sample:
    server = Server.start(steps)
    env = server.env(workdir)
    if contender == "bare":
        argv = [sys.executable, __file__, "--bare", server.url, str(shape_file)]
    elif contender == "dsh run":
        argv = [str(BIN / "dsh"), "run", "--yes", "--cwd", str(workdir / "ws"), TASK]
    else:
        argv = [sys.executable, __file__, "--jsonrpc", str(workdir / "ws")]
    start = time.perf_counter()
    with tempfile.TemporaryFile() as errors:
        process = subprocess.Popen(
            argv,
            cwd=workdir / "ws",
            env=env,
            stdout=subprocess.PIPE,
            stderr=errors,
            stdin=subprocess.DEVNULL,
        )
        assert process.stdout is not None
        out = process.stdout.read()
        _, status, usage = os.wait4(process.pid, 0)  # rusage of the process and its children
        wall = time.perf_counter() - start
        process.returncode = os.waitstatus_to_exitcode(status)
        gaps, _ = server.stop()
        if process.returncode != 0:
            errors.seek(0)
            tail = errors.read()[-800:].decode(errors="replace")
            raise SystemExit(f"{contender} N={steps} exited {process.returncode}: {tail}")
    notifications = (
        json.loads(out.splitlines()[-1])["notifications"] if contender == "jsonrpc" else None
    )
    cpu = usage.ru_utime + usage.ru_stime
    return Sample(wall, cpu, usage.ru_maxrss / 1024, gaps, notifications)


def record_shape(workdir: Path, shape_file: Path) -> None:
    """One answer to `dsh run`, its request kept: the bare loop repeats its shape (system
    prompt, tools, options) so both send the same bytes."""
    server = Server.start(0)
    argv = [str(BIN / "dsh"), "run", "--yes", "--cwd", str(workdir / "ws"), TASK]
    quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
    subprocess.run(argv, env=server.env(workdir), check=True, **quiet)
    _, body = server.stop()
    shape = {k: v for k, v in body.items() if k != "messages"}
    shape["system"] = body["messages"][0]["content"]
    shape_file.write_text(json.dumps(shape))


BOOT = """
import asyncio, time
start = time.perf_counter()
import dsh

async def main():
    ctx = await dsh.boot()
    print(time.perf_counter() - start)
    await ctx.owner.dispose()

asyncio.run(main())
"""


def boot_seconds(workdir: Path) -> float:
    """`import dsh` and `boot()` of the default profile, timed inside a new process."""
    server = Server.start(0)
    out = subprocess.run(
        [sys.executable, "-c", BOOT],
        env=server.env(workdir),
        cwd=workdir / "ws",
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    server.stop()
    return float(out.strip().splitlines()[-1])


# -- the report ------------------------------------------------------------------------------


def med(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def summary(samples: list[Sample]) -> dict[str, float]:
    gaps = [g for s in samples for g in s.gaps]
    first = [med(s.gaps[:10]) for s in samples]
    last = [med(s.gaps[-11:-1]) for s in samples]  # the final answer's request left out
    return {
        "wall": med([s.wall for s in samples]),
        "cpu": med([s.cpu for s in samples]),
        "rss": max(s.rss_mib for s in samples),
        "gap": med(gaps),
        "first": med(first),
        "last": med(last),
        "notes": med([float(s.notifications) for s in samples if s.notifications is not None]),
    }


def report(results: dict[tuple[str, int], list[Sample]], sizes: tuple[int, ...]) -> None:
    print(
        f"{'':>9} {'N':>4} | {'wall s':>7} {'cpu s':>6} {'RSS MiB':>8} | {'gap ms':>7} "
        f"{'first10':>7} {'last10':>7} {'last/1st':>8} | {'wall x':>6} {'cpu x':>6} {'gap x':>6} | "
        "notif."
    )
    for steps in sizes:
        floor = summary(results[("bare", steps)])
        for contender in CONTENDERS:
            s = summary(results[(contender, steps)])
            drift = s["last"] / s["first"] if steps >= 20 else float("nan")
            notes = "" if s["notes"] != s["notes"] else f"{s['notes']:.0f}"
            print(
                f"{contender:>9} {steps:>4} | "
                f"{s['wall']:>7.2f} {s['cpu']:>6.2f} {s['rss']:>8.1f} | "
                f"{s['gap']:>7.2f} {s['first']:>7.2f} {s['last']:>7.2f} {drift:>8.2f} | "
                f"{s['wall'] / floor['wall']:>6.2f} {s['cpu'] / floor['cpu']:>6.2f} "
                f"{s['gap'] / floor['gap']:>6.2f} | {notes}"
            )


def targets(
    results: dict[tuple[str, int], list[Sample]], sizes: tuple[int, ...], boot: float
) -> None:
    """The issue's targets, each a ratio (or a difference) within this one run."""
    small, large = min(sizes), max(sizes)
    run, floor = summary(results[("dsh run", large)]), summary(results[("bare", large)])
    run1, floor1 = summary(results[("dsh run", small)]), summary(results[("bare", small)])
    rpc = summary(results[("jsonrpc", large)])
    checks = [
        (f"dsh run N={large} wall <= 1.5x the floor", run["wall"] / floor["wall"], 1.5, "x"),
        (f"dsh run N={small} wall - the floor <= 0.4 s", run1["wall"] - floor1["wall"], 0.4, "s"),
        ("dsh run gap per step <= 2x the floor's", run["gap"] / floor["gap"], 2.0, "x"),
        ("dsh run gap last 10 / first 10 <= 1.2", run["last"] / run["first"], 1.2, "x"),
        ("dsh run peak RSS <= 50 MiB", max(run1["rss"], run["rss"]), 50.0, " MiB"),
        ("jsonrpc gap per step <= 5 ms", rpc["gap"], 5.0, " ms"),
        ("import dsh + boot() <= 150 ms", boot * 1e3, 150.0, " ms"),
    ]
    print()
    for name, value, limit, unit in checks:
        print(f"{'met   ' if value <= limit else 'MISSED'} {name}: {value:.2f}{unit}")


def compile_bytecode() -> None:
    """Write dsh's bytecode first, as an installation does: in an editable install under
    PYTHONDONTWRITEBYTECODE (set on the development machine) every process would otherwise
    compile every dsh module again (about 0.25 s of CPU per process)."""
    import compileall

    import dsh

    compileall.compile_dir(Path(dsh.__file__).parent, quiet=1)


def main(sizes: tuple[int, ...], reps: int) -> None:
    compile_bytecode()
    results: dict[tuple[str, int], list[Sample]] = {}
    boots: list[float] = []
    with tempfile.TemporaryDirectory(prefix="dsh-e2e-") as folder:
        workdir = Path(folder)
        (workdir / "ws").mkdir()
        (workdir / "ws" / "hello.txt").write_text(HELLO)
        shape_file = workdir / "shape.json"
        record_shape(workdir, shape_file)
        for rep in range(reps):
            boots.append(boot_seconds(workdir))
            for steps in sizes:
                turn = rep % len(CONTENDERS)
                for contender in CONTENDERS[turn:] + CONTENDERS[:turn]:  # who goes first rotates
                    sample = measure(contender, steps, workdir, shape_file)
                    results.setdefault((contender, steps), []).append(sample)
            print(f"repetition {rep + 1}/{reps} done", file=sys.stderr)
    print(
        f"e2e: whole processes vs a loopback model server, one read per step, "
        f"median of {reps} interleaved repetitions (load average {os.getloadavg()[0]:.1f})"
    )
    report(results, sizes)
    targets(results, sizes, med(boots))


if __name__ == "__main__":
    if sys.argv[1:2] == ["--serve"]:
        serve(int(sys.argv[2]))
    elif sys.argv[1:2] == ["--bare"]:
        bare(sys.argv[2], sys.argv[3])
    elif sys.argv[1:2] == ["--jsonrpc"]:
        jsonrpc(sys.argv[2])
    else:
        parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
        parser.add_argument("--sizes", default=",".join(map(str, SIZES)), help="e.g. 1,50,200")
        parser.add_argument("--reps", type=int, default=REPS)
        args = parser.parse_args()
        main(tuple(int(n) for n in args.sizes.split(",")), args.reps)
