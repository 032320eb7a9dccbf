"""Process start-up: `dsh --version`, and `dsh run` up to its first model request.

Cold processes (a new interpreter each time), median of 10. Target: <= 0.4 s to the first
request — nothing heavy is imported on paths that do not need it. Also the modules a
`dsh run` process imports in all, by package (`-X importtime`): a figure that does not move
with the machine's load.
"""

from __future__ import annotations

import asyncio
import collections
import os
import statistics
import sys
import tempfile
import time

from e2e import compile_bytecode  # bench/ is the script's folder

from dsh.testing import OpenAIServer

RUNS = 10
DSH = [sys.executable, "-c", "from dsh.cli import main; main()"]


async def version_seconds() -> float:
    start = time.perf_counter()
    process = await asyncio.create_subprocess_exec(
        *DSH, "--version", stdout=asyncio.subprocess.DEVNULL
    )
    await process.wait()
    return time.perf_counter() - start


async def first_request_seconds(workdir: str) -> float:
    arrived = asyncio.get_running_loop().create_future()
    async with OpenAIServer(["done"]) as server:
        server.on_request = lambda _request: (
            arrived.done() or arrived.set_result(time.perf_counter())
        )
        start = time.perf_counter()
        process = await _dsh_run(server, workdir)
        first = await asyncio.wait_for(arrived, timeout=60)
        await process.wait()
    return float(first) - start


async def imported_modules(workdir: str) -> collections.Counter[str]:
    """The modules a whole `dsh run` process imports, by top-level package."""
    async with OpenAIServer(["done"]) as server:
        process = await _dsh_run(
            server, workdir, "-X", "importtime", stderr=asyncio.subprocess.PIPE
        )
        _, err = await process.communicate()
    lines = [line for line in err.decode().splitlines() if line.startswith("import time:")]
    names = [line.rpartition("|")[2].strip() for line in lines[1:]]  # after the header
    return collections.Counter(name.split(".")[0] for name in names)


async def _dsh_run(
    server: OpenAIServer,
    workdir: str,
    *python_options: str,
    stderr: int = asyncio.subprocess.DEVNULL,
) -> asyncio.subprocess.Process:
    """`dsh run hello` in `workdir` against `server`, in a new interpreter."""
    env = {
        **os.environ,
        "DEEPSEEK_BASE_URL": server.base_url,
        "DEEPSEEK_API_KEY": "bench",
        "DSH_SESSION_ROOT": os.path.join(workdir, "sessions"),
    }
    return await asyncio.create_subprocess_exec(
        DSH[0],
        *python_options,
        *DSH[1:],
        "run",
        "--cwd",
        workdir,
        "hello",
        stdout=asyncio.subprocess.DEVNULL,
        stderr=stderr,
        env=env,
    )


async def main() -> None:
    compile_bytecode()
    versions = [await version_seconds() for _ in range(RUNS)]
    with tempfile.TemporaryDirectory() as workdir:
        firsts = [await first_request_seconds(workdir) for _ in range(RUNS)]
        modules = await imported_modules(workdir)
    version = statistics.median(versions)
    first = statistics.median(firsts)
    print(f"dsh --version, median of {RUNS}:            {version:.3f} s")
    print(f"dsh run to its first model request, median: {first:.3f} s")
    packages = ", ".join(f"{name} {count}" for name, count in modules.most_common(8))
    print(f"dsh run imports {modules.total()} modules: {packages}, …")
    print(f"summary: --version {version:.3f} s; first request {first:.3f} s (<= 0.4)")


if __name__ == "__main__":
    asyncio.run(main())
