"""The page in a real Chromium (Debian's, driven by Playwright) against a real server: what a
person sees and clicks. A failing test saves a screenshot (see `SCREENSHOTS`)."""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest
from playwright.async_api import Page, expect

from dsh.llm import TokenUsage
from dsh.testing import ScriptedModel, hold, reasoning, reply, tool_call
from dsh.workspace import dsh_home
from tests.cli.support import cli_env, run_dsh, scripted_profile
from tests.conftest import REPO
from tests.plugins.mcp.support import OAuthServer, running_oauth_server, stdio_server
from tests.questions import CHECKS, DATABASE
from tests.server.support import steps

from .browser import CHROMIUM, chromium
from .support import TOKEN, Site

SCREENSHOTS = Path(os.environ.get("DSH_TEST_ARTIFACTS", REPO / ".test-artifacts")) / "web"
WAIT_MS = 30_000
"""How long an expectation waits (the machine may be busy; a passing test waits far less)."""

expect.set_options(timeout=WAIT_MS)


@pytest.fixture
async def page(request: pytest.FixtureRequest, served: str) -> AsyncIterator[Page]:
    if not await asyncio.to_thread(CHROMIUM.exists):
        pytest.skip(f"no Chromium at {CHROMIUM} (.ci/run installs Debian's chromium package)")
    errors: list[str] = []
    async with chromium() as browser:
        context = await browser.new_context(viewport={"width": 1200, "height": 900})
        context.set_default_timeout(WAIT_MS)
        page = await context.new_page()
        page.on("pageerror", lambda error: errors.append(str(error)))
        yield page
        report = getattr(request.node, "report_call", None)
        if report is not None and report.failed:
            SCREENSHOTS.mkdir(parents=True, exist_ok=True)
            shot = SCREENSHOTS / f"{request.node.name}.png"
            await page.screenshot(path=str(shot), full_page=True)
            print(f"screenshot of the failing page: {shot}")
    assert errors == [], errors


async def login(page: Page, served: str) -> None:
    await page.goto(f"{served}/?token={TOKEN}")
    await expect(page.get_by_role("textbox", name="Message")).to_be_editable()


async def send(page: Page, text: str) -> None:
    await page.get_by_role("textbox", name="Message").fill(text)
    await page.get_by_role("button", name="Send").click()


async def test_an_answer_streams_and_a_tool_card_shows_its_result(
    site: Site, page: Page, served: str
) -> None:
    (site.workspace / "notes.txt").write_text("the meeting is at noon\n")
    held = hold()
    site.model.add(
        reply(reasoning("The notes will say."), tool_call("read", {"file_path": "notes.txt"})),
        reply("The meeting is ", held, "at **noon**.", usage=TokenUsage(1200, 30)),
    )
    await login(page, served)
    await send(page, "When is the meeting?")
    log = page.get_by_role("log")
    card = log.locator("article.tool")
    await expect(card).to_contain_text("read")
    await expect(card).to_contain_text("the meeting is at noon")
    await expect(log.locator(".answer")).to_have_text("The meeting is")  # streamed so far
    await expect(page.get_by_role("button", name="Cancel")).to_be_visible()
    held.release()
    await expect(log.locator(".answer strong")).to_have_text("noon")  # Markdown
    await expect(log.locator(".turn-end")).to_contain_text("completed")
    await expect(log.locator(".turn-end")).to_contain_text("↑ 1.2k in")
    await expect(page.get_by_role("button", name="Cancel")).to_be_hidden()
    reasoning_box = log.locator("details.reasoning")
    await expect(reasoning_box).to_contain_text("Reasoning")
    assert await reasoning_box.get_attribute("open") is None  # folded


async def test_changes_are_approved_or_denied_in_the_page(
    site: Site, page: Page, served: str
) -> None:
    target = site.workspace / "greeting.py"
    target.write_text("print('hi')\n")
    site.model.add(
        reply(tool_call("write", {"file_path": "other.py", "content": "print('hello')\n"})),
        reply(tool_call("read", {"file_path": "greeting.py"})),
        reply(
            tool_call(
                "edit", {"file_path": "greeting.py", "old_string": "hi", "new_string": "hello"}
            )
        ),
        reply(tool_call("write", {"file_path": "CHANGES.md", "content": "- say hello\n"})),
        reply("Changed the greeting."),
    )
    await login(page, served)
    await send(page, "Greet with hello")
    log = page.get_by_role("log")

    write = log.locator("article.tool", has_text="other.py")
    await expect(write.locator(".diff")).to_contain_text("+print('hello')")
    await expect(page.get_by_role("status")).to_have_text("waiting for approval")
    await write.get_by_role("textbox", name="Reason").fill("edit greeting.py instead")
    await write.get_by_role("button", name="Deny").click()
    await expect(write).to_contain_text("denied: edit greeting.py instead")
    await expect(write.locator(".output")).to_contain_text("the user rejected tool")

    edit = log.locator("article.tool", has=page.locator(".tool-name", has_text="edit"))
    await expect(edit.locator(".diff")).to_contain_text("-print('hi')")
    await expect(edit.locator(".diff")).to_contain_text("+print('hello')")
    await edit.get_by_role("button", name="Allow", exact=True).click()
    await expect(edit).to_contain_text("allowed once")

    changes = log.locator("article.tool", has_text="CHANGES.md")
    await expect(changes.locator(".diff")).to_contain_text("+- say hello")
    await changes.get_by_role("button", name="Allow for this session").click()
    await expect(changes).to_contain_text("allowed for this session")
    await expect(log).to_contain_text("Changed the greeting.")
    assert target.read_text() == "print('hello')\n"
    assert (site.workspace / "CHANGES.md").read_text() == "- say hello\n"
    assert not (site.workspace / "other.py").exists()


async def test_a_reload_in_the_middle_of_a_turn_loses_and_repeats_nothing(
    site: Site, page: Page, served: str
) -> None:
    held = hold()
    site.model.add(reply("Alpha beta ", held, "gamma delta."))
    await login(page, served)
    await send(page, "Say four words")
    log = page.get_by_role("log")
    answer = log.locator(".step")
    await expect(answer).to_have_text("Alpha beta", use_inner_text=True)
    await held.reached()

    await page.reload()  # the address keeps the session
    await expect(answer).to_have_text("Alpha beta", use_inner_text=True)
    held.release()
    await expect(answer).to_have_text("Alpha beta gamma delta.", use_inner_text=True)
    await expect(log.locator(".turn-end")).to_have_count(1)
    text = await log.inner_text()
    assert [text.count(s) for s in ("Say four words", "Alpha beta", "gamma delta.")] == [1, 1, 1]


async def test_steering_while_it_runs_then_cancel(site: Site, page: Page, served: str) -> None:
    held = hold()
    site.model.add(reply("Working on it", held, "…"))
    await login(page, served)
    await send(page, "Start a long job")
    await held.reached()
    await send(page, "Also check the tests")  # joins the running turn at its next step
    await expect(page.get_by_label("Waiting messages")).to_contain_text(
        "steering: Also check the tests"
    )
    await page.get_by_role("button", name="Cancel").click()
    log = page.get_by_role("log")
    await expect(log.locator(".turn-end")).to_contain_text("cancelled: user")
    await expect(page.get_by_label("Waiting messages")).to_be_empty()


async def test_sessions_made_by_dsh_run_are_listed_and_shown(
    site: Site, page: Page, served: str, session_root: Path, tmp_path: Path
) -> None:
    denied = await page.goto(served)
    assert denied is not None and denied.status == 401

    profile = scripted_profile(tmp_path, ["The build is green."])
    env = cli_env(tmp_path, DSH_SESSION_ROOT=str(session_root))
    args = ["--profile", str(profile), "--provider", "scripted", "--model", "scripted"]
    code, _, err = await run_dsh(
        env, "run", "Is the build green?", "--cwd", str(site.workspace), *args
    )
    assert code == 0, err

    await login(page, served)
    sessions = page.get_by_role("navigation", name="Sessions")
    entry = sessions.get_by_role("button", name="Is the build green?")
    await expect(entry).to_contain_text("1 turn")
    await entry.click()
    log = page.get_by_role("log")
    await expect(log.locator(".answer")).to_have_text("The build is green.")
    await expect(page.get_by_role("status")).to_contain_text("stored session")
    await expect(page.get_by_role("heading", level=1)).to_have_text("Is the build green?")


async def test_fork_from_a_prompt_then_a_new_session(site: Site, page: Page, served: str) -> None:
    site.model.add("One.", "Two.", "Two, differently.")
    await login(page, served)
    await send(page, "First")
    log = page.get_by_role("log")
    await expect(log.locator(".turn-end")).to_have_count(1)
    await send(page, "Second")
    await expect(log.locator(".turn-end")).to_have_count(2)
    parent = page.url

    second = log.locator(".msg.user", has_text="Second")
    await second.get_by_role("button", name="Fork").click()
    await expect(page).not_to_have_url(parent)
    box = page.get_by_role("textbox", name="Message")
    await expect(box).to_have_value("Second")  # to edit and send again
    await expect(log).to_contain_text("One.")  # the turns before the prompt
    await expect(log).not_to_contain_text("Two.")
    await box.fill("Second, but differently")
    await page.get_by_role("button", name="Send").click()
    await expect(log).to_contain_text("Two, differently.")
    sessions = page.get_by_role("navigation", name="Sessions").get_by_role("button")
    await expect(sessions).to_have_count(2)

    await page.get_by_role("button", name="New session").click()
    await expect(page.get_by_role("heading", level=1)).to_have_text("New session")
    await expect(log).to_be_empty()
    await expect(box).to_be_focused()


async def test_the_models_questions_are_answered_in_the_page_after_a_reload(
    site: Site, page: Page, served: str
) -> None:
    site.model.add(
        reply(tool_call("ask_user_question", {"questions": [DATABASE]})),
        reply(tool_call("ask_user_question", {"questions": [CHECKS, {"question": "Port?"}]})),
        reply("Set up with SQLite."),
    )
    await login(page, served)
    await send(page, "Set up the project")
    log = page.get_by_role("log")
    first = log.locator("article.tool").first
    question = first.get_by_role("group", name="Which database?")
    await expect(question).to_contain_text("Database")
    await expect(question.get_by_role("button", name="PostgreSQL")).to_contain_text("a server")
    await expect(page.get_by_role("status")).to_have_text("waiting for an answer")

    await page.reload()  # the question is still open, and still answerable
    question = first.get_by_role("group", name="Which database?")
    await expect(page.get_by_role("status")).to_have_text("waiting for an answer")
    await question.get_by_role("button", name="SQLite").click()  # one choice: a click answers
    await expect(first.locator(".output")).to_contain_text("Which database? → SQLite")
    await expect(question.get_by_role("button", name="SQLite")).to_be_disabled()
    await expect(question.get_by_role("textbox", name="Your answer")).to_have_count(0)

    second = log.locator("article.tool").nth(1)
    several = second.get_by_role("group", name="Which checks?")
    await several.get_by_role("button", name="lint").click()
    await several.get_by_role("button", name="tests").click()
    await expect(several.get_by_role("button", name="tests")).to_have_attribute(
        "aria-pressed", "true"
    )
    port = second.get_by_role("group", name="Port?")
    await port.get_by_role("textbox", name="Your answer").fill("5433")
    await second.get_by_role("button", name="Answer", exact=True).click()
    await expect(second.locator(".output")).to_contain_text("Which checks? → lint, tests")
    await expect(second.locator(".output")).to_contain_text('Port? → "5433"')
    await expect(log).to_contain_text("Set up with SQLite.")
    await expect(page.get_by_role("status")).to_have_text("idle")


async def test_the_effort_picker_switches_and_says_the_prefix_is_repaid(
    site: Site, page: Page, served: str
) -> None:
    other = ScriptedModel(["from the other model"], model="big", efforts=("low", "high"))
    other.install(site.ctx, provider="other")
    site.model.add(reply("first"))
    await login(page, served)
    await send(page, "Start")
    log = page.get_by_role("log")
    await expect(log.locator(".turn-end")).to_contain_text("completed")
    model = page.get_by_role("combobox", name="Model")
    effort = page.get_by_role("combobox", name="Reasoning effort")
    await expect(model).to_have_value("scripted:scripted")
    await model.select_option("other:big")
    status = page.get_by_role("status")
    await expect(status).to_contain_text("re-pays the cached prompt prefix once")
    await expect(log.locator(".notice")).to_contain_text("switched to other:big")
    await expect(effort.locator("option")).to_have_text(["default", "low", "high"])
    await effort.select_option("high")
    await expect(status).to_contain_text("switched to other:big (reasoning high)")
    await send(page, "Again")
    await expect(log.locator(".answer").nth(1)).to_have_text("from the other model")
    assert (other.requests[-1].model, other.requests[-1].reasoning_effort) == ("big", "high")


async def test_a_released_session_is_stored_again_and_resumes_in_place(
    site: Site, page: Page, served: str
) -> None:
    site.model.add(reply("First answer."), reply("Second answer."))
    await login(page, served)
    await send(page, "Hello")
    log = page.get_by_role("log")
    await expect(log.locator(".turn-end")).to_contain_text("completed")
    await page.get_by_role(
        "button", name="Release", exact=True
    ).click()  # another program may take it
    status = page.get_by_role("status")
    await expect(status).to_have_text("stored session: sending a message resumes it")
    await expect(page.get_by_role("button", name="Release", exact=True)).to_be_hidden()
    await page.get_by_role("button", name="Resume").click()
    await expect(status).to_have_text("idle")
    await send(page, "Again")
    await expect(log.locator(".turn-end")).to_have_count(2)
    await expect(log.locator(".answer").last).to_have_text("Second answer.")
    await expect(log.locator(".answer")).to_have_count(2)  # the same stream: nothing twice


async def test_a_commands_output_streams_into_its_card(site: Site, page: Page, served: str) -> None:
    gate = site.workspace / "gate"
    os.mkfifo(gate)
    command = f"for i in 1 2; do echo line$i; done; cat {gate} >/dev/null; echo line3"
    site.model.add(
        reply(tool_call("bash", {"command": command, "description": "Count"})), reply("Counted.")
    )
    await login(page, served)
    await send(page, "count")
    log = page.get_by_role("log")
    card = log.locator("article.tool")
    await card.get_by_role("button", name="Allow", exact=True).click()
    live = card.locator(".live-output")
    await expect(live).to_have_text("line1\nline2")  # the call waits on the gate: running
    await expect(card.locator(".tool-status")).to_contain_text("running · ")
    await expect(card.locator(".output")).to_have_count(0)
    await asyncio.to_thread(gate.write_text, "go\n")
    await expect(card.locator(".output")).to_contain_text("line1\nline2\nline3")
    await expect(live).to_have_count(0)  # folded into the result
    await expect(card.locator(".tool-status")).to_have_text("done")
    await expect(log).to_contain_text("Counted.")


async def test_a_plugin_tools_progress_shows_in_its_card(
    site: Site, page: Page, served: str
) -> None:
    gate = site.workspace / "gate"
    os.mkfifo(gate)
    site.ctx.tools.register(steps)
    site.model.add(
        reply(tool_call("steps", {"count": 3, "gate": str(gate)})), reply("Three steps.")
    )
    await login(page, served)
    await send(page, "step")
    card = page.get_by_role("log").locator("article.tool")
    await card.get_by_role("button", name="Allow", exact=True).click()
    await expect(card.locator(".tool-status")).to_contain_text("step 3 of 3 (100%)")
    await asyncio.to_thread(gate.write_text, "go\n")
    await expect(card.locator(".output")).to_contain_text("3 steps done")
    await expect(card.locator(".tool-status")).to_have_text("done")


# -- MCP: the suggestions of the message box, and the login link of a server --


@pytest.fixture
def servers() -> Iterator[OAuthServer]:
    """`calc` (stdio, with prompts and resources) and `hosted` (OAuth) in the user's mcp.json,
    written before the site's runtime boots."""
    with running_oauth_server() as hosted:
        dsh_home().mkdir(parents=True, exist_ok=True)
        entries = {"calc": stdio_server(), "hosted": hosted.entry()}
        (dsh_home() / "mcp.json").write_text(json.dumps({"mcpServers": entries}))
        yield hosted


async def test_the_composer_suggests_prompts_and_mentions_and_a_login_link_shows(
    servers: OAuthServer, site: Site, page: Page, served: str
) -> None:
    site.model.add(reply("Ready."), reply("Reviewed."))
    await login(page, served)
    await send(page, "hello")  # the first turn starts the servers
    log = page.get_by_role("log")
    await expect(log.locator(".answer")).to_have_text("Ready.")
    box = page.get_by_role("textbox", name="Message")
    await box.focus()
    await box.press_sequentially("/mcp__calc__r")
    suggestions = page.get_by_role("list", name="Suggestions")
    await expect(suggestions).to_contain_text("/mcp__calc__review")
    await expect(suggestions).to_contain_text("Review a file.")
    await box.press("Tab")
    await expect(box).to_have_value("/mcp__calc__review ")
    await box.press_sequentially("a.py @calc:memo://o")
    await expect(suggestions).to_contain_text("The first memo")
    await suggestions.get_by_text("@calc:memo://one").click()
    await expect(box).to_have_value("/mcp__calc__review a.py @calc:memo://one")
    await box.press("Enter")
    await expect(log.locator(".answer").last).to_have_text("Reviewed.")
    sent = site.model.requests[-1].messages[-1].text  # the prompt, its mention attached
    assert sent == "Review a.py, looking for @calc:memo://one.[resource memo://one]\nmemo one"

    panel = page.get_by_role("list", name="MCP servers")
    await expect(panel).to_contain_text("hosted: login required")
    await panel.get_by_role("button", name="Log in to hosted").click()
    link = panel.get_by_role("link", name="Open the login page of hosted")
    href = await link.get_attribute("href")
    assert href is not None and href.startswith(servers.base + "/authorize?")
    async with httpx.AsyncClient(follow_redirects=True) as browser:  # the person's browser
        (await browser.get(href)).raise_for_status()
    await expect(panel).not_to_contain_text("login required")  # the page follows the login
    assert servers.state()["authorizations"] == 1
