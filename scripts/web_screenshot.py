"""Make docs/web.png: the web UI after a turn with tool calls and an approved edit.

    .venv/bin/python scripts/web_screenshot.py [OUT.png]

It runs the real stack — the default profile, the web UI served by uvicorn, Debian's Chromium
driven by Playwright — with a scripted model (no network, no key), in a scratch workspace:
the prompt is typed, the edit approved in the page, and the finished turn photographed.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "docs" / "web.png"
sys.path.insert(0, str(REPO))  # tests.web.browser: Chromium as the browser tests launch it
GREETING = """def greet(name):
    return "Hello " + name


if __name__ == "__main__":
    print(greet("world"))
"""
ANSWER = """Done: `greet` now uses an f-string and says **Hello, name!**

- `greeting.py`: one line changed
- run it with `python greeting.py`:

```python
>>> greet("world")
'Hello, world!'
```"""


def script() -> list[object]:
    from dsh.llm import TokenUsage
    from dsh.testing import reasoning, reply, tool_call

    edit = {
        "file_path": "greeting.py",
        "old_string": '    return "Hello " + name',
        "new_string": '    return f"Hello, {name}!"',
    }
    return [
        reply(
            reasoning("Read greeting.py before changing it."),
            "Let me look at the file first.",
            tool_call("read", {"file_path": "greeting.py"}),
            usage=TokenUsage(294, 41, cache_read_tokens=1536),
        ),
        reply(tool_call("edit", edit), usage=TokenUsage(220, 58, cache_read_tokens=1792)),
        reply(ANSWER, usage=TokenUsage(161, 96, cache_read_tokens=1984)),
    ]


async def main(out: Path) -> None:
    from playwright.async_api import expect

    from dsh.agent import AgentOptions
    from dsh.profiles import boot
    from dsh.testing import ScriptedModel
    from dsh.web import WebConfig, WebUI, bind, serve
    from tests.web.browser import chromium

    scratch = Path(tempfile.gettempdir()) / "dsh-web-screenshot"
    shutil.rmtree(scratch, ignore_errors=True)
    workspace = scratch / "project"
    workspace.mkdir(parents=True)
    (workspace / "greeting.py").write_text(GREETING)
    os.environ["DSH_SESSION_ROOT"] = str(scratch / "sessions")
    os.environ["HOME"] = str(scratch)  # no user settings or hooks take part

    async with boot() as ctx:
        ScriptedModel(script()).install(ctx)
        config = WebConfig(workspace, AgentOptions("scripted", "scripted"), "screenshot-token")
        web = WebUI(ctx, config)
        sock = bind("127.0.0.1", 0)
        stop = asyncio.Event()
        server = asyncio.create_task(serve(web, sock, stop=stop))
        url = f"http://127.0.0.1:{sock.getsockname()[1]}/?token={config.token}"
        async with chromium() as browser:
            page = await browser.new_page(viewport={"width": 1280, "height": 1140})
            await page.goto(url)
            await page.get_by_role("textbox", name="Message").fill(
                "Make greet() use an f-string and add a comma and an exclamation mark."
            )
            await page.get_by_role("button", name="Send").click()
            await page.get_by_role("button", name="Allow", exact=True).click()
            log = page.get_by_role("log")
            await expect(log.locator(".turn-end")).to_contain_text("completed", timeout=30_000)
            listed = page.get_by_role("navigation", name="Sessions").get_by_role("button")
            await expect(listed).to_contain_text("Make greet()", timeout=30_000)
            await page.evaluate("document.activeElement.blur()")
            await page.screenshot(path=str(out))
        stop.set()
        await server
    print(f"wrote {out}")


if __name__ == "__main__":
    asyncio.run(main(Path(sys.argv[1]) if len(sys.argv) > 1 else OUT))
