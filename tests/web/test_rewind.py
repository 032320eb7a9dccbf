"""Rewind in the page (a real Chromium): the Rewind action on a prompt shows what its turn
changed, then the rewind's diff, applies it, and undoes it."""

from __future__ import annotations

from pathlib import Path

from playwright.async_api import Page, expect

from dsh.testing import reply, tool_call
from tests.plugins.rewind.scenario import bash, tree_hash

from .support import Site
from .test_browser import login, page, send

__all__ = ["page"]  # the fixture, used by name


async def allow(page: Page, tool: str) -> None:
    card = page.get_by_role("log").locator(
        "article.tool", has=page.locator(".tool-name", has_text=tool)
    )
    await card.get_by_role("button", name="Allow", exact=True).click()


async def test_rewind_a_prompt_in_the_page(site: Site, page: Page, served: str) -> None:
    ws: Path = site.workspace
    (ws / "a.txt").write_bytes(b"alpha\n")
    (ws / "logo.bin").write_bytes(bytes(range(256)))
    site.model.add(
        reply(tool_call("read", {"file_path": "a.txt"})),
        reply(
            tool_call("edit", {"file_path": "a.txt", "old_string": "alpha", "new_string": "beta"})
        ),
        reply("Edited."),
        reply(bash("printf 'bee\\n' > b.txt && printf '\\001' > logo.bin")),
        reply("Created."),
        reply("Again."),
    )
    first = tree_hash(ws)
    await login(page, served)
    log = page.get_by_role("log")
    await send(page, "Edit a.txt")
    await allow(page, "edit")
    await expect(log.locator(".turn-end")).to_have_count(1)
    await send(page, "Create b.txt")
    await allow(page, "bash")
    await expect(log.locator(".turn-end")).to_have_count(2)
    final = tree_hash(ws)

    prompt = log.locator(".msg.user", has_text="Edit a.txt")
    await prompt.get_by_role("button", name="Rewind").click()
    panel = prompt.locator(".rewind-panel")
    await expect(panel.locator(".rewind-changed")).to_contain_text("this turn changed M a.txt")
    await expect(panel.locator(".rewind-changed .diff")).to_contain_text("+beta")
    await panel.get_by_role("button", name="Both").click()
    result = panel.locator(".rewind-result")
    await expect(result).to_contain_text("files: M a.txt, D b.txt, M logo.bin")
    await expect(result.locator(".diff")).to_contain_text("+alpha")
    assert tree_hash(ws) == final  # the diff first, nothing changed yet
    await result.get_by_role("button", name="Apply").click()
    await expect(result).to_contain_text("rewound")
    await expect(log.locator(".notice.rewound")).to_have_count(2)
    assert tree_hash(ws) == first

    await result.get_by_role("button", name="Undo").click()
    await expect(result).to_contain_text("rewind undone")
    await expect(log.locator(".notice.rewound")).to_have_count(4)
    assert tree_hash(ws) == final
    await send(page, "Once more")
    await expect(log).to_contain_text("Again.")
    sent = [m.text for m in site.model.last_request.messages if m.role == "user"]  # type: ignore[union-attr]
    assert [t for t in sent if t in ("Edit a.txt", "Create b.txt", "Once more")] == [
        "Edit a.txt",
        "Create b.txt",
        "Once more",
    ]


async def test_a_file_changed_outside_is_kept_unless_taken_back(
    site: Site, page: Page, served: str
) -> None:
    ws: Path = site.workspace
    site.model.add(reply(bash("printf 'one\\n' > a.txt && printf 'x\\n' > b.txt")), reply("Made."))
    await login(page, served)
    log = page.get_by_role("log")
    await send(page, "Make files")
    await allow(page, "bash")
    await expect(log.locator(".turn-end")).to_have_count(1)
    (ws / "a.txt").write_bytes(b"mine\n")  # the person, after the turn

    prompt = log.locator(".msg.user", has_text="Make files")
    await prompt.get_by_role("button", name="Rewind").click()
    panel = prompt.locator(".rewind-panel")
    await panel.get_by_role("button", name="Code").click()
    result = panel.locator(".rewind-result")
    await expect(result).to_contain_text("kept (changed outside dsh since then): a.txt")
    await expect(result.get_by_role("button", name="Apply, taking those back too")).to_be_visible()
    await result.get_by_role("button", name="Apply", exact=True).click()
    await expect(result).to_contain_text("rewound")
    assert (ws / "a.txt").read_bytes() == b"mine\n"
    assert not (ws / "b.txt").exists()
