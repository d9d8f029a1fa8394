"""A shared workstation in a real browser: alice and bob sign in through the login page in their own
browser contexts; alice's previews, uploads and result link work for her and for nobody else."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import cv2
import pytest

from pipeline.settings import Settings
from tests.browser.helpers import (
    chromium,
    dropdown_options,
    open_tab,
    running_app,
    screenshot,
    sign_in,
    upload,
)
from tests.photos import astronaut, grace_hopper_path
from tests.timing import wait_until

pytestmark = [pytest.mark.browser, pytest.mark.slow]

USERS = (("alice", "alice-pw"), ("bob", "bob-pw"), ("carol", "carol-pw"))
VIEWPORT = {"width": 1600, "height": 1000}




def absolute(url: str, href: str) -> str:
    return href if href.startswith("http") else url + href


def test_two_users_in_the_browser_never_see_each_others_files(tmp_path: Path) -> None:
    target = tmp_path / "target.png"
    cv2.imwrite(str(target), astronaut())
    with running_app(users=USERS, admins=frozenset({"carol"}), worker=False, data=tmp_path / "data",
                     outputs=tmp_path / "outputs") as (url, app), chromium() as browser:
        alice, bob = sign_in(browser, url, *USERS[0], VIEWPORT), sign_in(browser, url, *USERS[1], VIEWPORT)
        anon = browser.new_context()

        # alice's uploads and preview reach her (the gate lets her own files through) ...
        upload(alice, "sources", grace_hopper_path())
        upload(alice, "target", target)
        wait_until(lambda: alice.locator("#preview img").count()
                   and "ms" in alice.inner_text("#preview-status"), 120, what="alice's preview")
        src = absolute(url, str(alice.locator("#preview img").first.get_attribute("src")))
        assert "/gradio_api/file=" in src and alice.request.get(src).status == 200
        # ... and nobody else
        assert bob.request.get(src).status == 403
        assert anon.request.get(src).status == 401
        screenshot(alice, "security-alice-preview")

        # a finished job of alice's: her link works for her only, and dies with the job
        out = app.ctx.outputs / "alice" / "result-swap.png"
        out.parent.mkdir(parents=True)
        cv2.imwrite(str(out), astronaut())
        job = app.ctx.store.add([str(grace_hopper_path())], str(target), str(out), Settings(), owner="alice")
        lease = app.ctx.store.claim_next("w")
        assert lease is not None and lease.id == job.id
        lease.finish("done")

        open_tab(alice, "Queue")
        alice.locator(f"#jobs tr[data-job='{job.id}']").first.click()  # select her job: player and link
        wait_until(lambda: alice.locator("#job-file a[href]").count() > 0, 30, what="the download link")
        href = absolute(url, str(alice.locator("#job-file a[href]").first.get_attribute("href")))
        assert alice.request.get(href).body() == out.read_bytes()
        assert bob.request.get(href).status == 404
        assert anon.request.get(href).status == 401
        # before / after are shown in her page from links of hers too, never from Gradio's cache
        panes = [absolute(url, str(alice.locator(f"#job-{p} img").first.get_attribute("src")))
                 for p in ("before", "after")]
        assert "/gradio_api/file=" not in " ".join(panes)
        assert [alice.request.get(p).body() for p in panes] == [target.read_bytes(), out.read_bytes()]
        wait_until(lambda: alice.evaluate("() => document.querySelector('#job-after img').naturalWidth") > 0,
                   30, what="the result shown in the page")
        assert all(bob.request.get(p).status == 404 for p in panes)
        screenshot(alice, "security-alice-link")

        # bob asking for alice's job gets the answer he gets for a job that does not exist
        bobs = app.ctx.store.add([str(grace_hopper_path())], str(target), str(out.with_name("bob.png")),
                                 Settings(), owner="bob")
        open_tab(bob, "Queue")
        row = "#jobs tr[data-job='{}']"
        wait_until(lambda: bob.locator(row.format(bobs.id)).count() == 1, 30, what="bob's own job row")
        assert bob.locator(row.format(job.id)).count() == 0  # alice's is not in his list to click
        answers = []
        for job_id in (job.id, 999):
            forge_selection(bob, job_id)  # as if his page selected it anyway
            wanted = f"no job {job_id} of yours in the queue"
            wait_until(lambda wanted=wanted: wanted in bob.inner_text("body"), 20, what=wanted)
            answers.append(wanted.replace(str(job_id), "N"))
        assert answers[0] == answers[1]
        screenshot(bob, "security-bob-refused")

        alice.click("#job-delete")  # acts on her selected job
        wait_until(lambda: [j.id for j in app.ctx.store.list()] == [bobs.id], 20, what="her job deleted")
        assert alice.request.get(href).status == 404
        assert all(alice.request.get(p).status == 404 for p in panes)

        # presets: alice's own stay hers; carol (admin) publishes a studio preset bob sees in his tab
        carol = sign_in(browser, url, *USERS[2], VIEWPORT)
        saves = ((alice, "alice look", "#preset-save"), (carol, "house look", "#preset-publish"))
        for page, name, button in saves:
            open_tab(page, "Presets")
            page.fill("#preset-name textarea, #preset-name input", name)
            page.click(button)
            wait_until(lambda page=page, name=name: name in page.inner_text("#preset-message"), 20, what=name)
        open_tab(bob, "Presets")
        wait_until(lambda: "house look (studio)" in dropdown_options(bob, "preset-list"), 20,
                   what="the studio preset in bob's list")
        assert not [o for o in dropdown_options(bob, "preset-list") if "alice look" in o]
        screenshot(bob, "security-bob-presets")


def forge_selection(page: Any, job_id: int) -> None:
    """Put a job number into the hidden selection box, as a row click would (the row is not there)."""
    page.evaluate("""(id) => {
        const box = document.querySelector('#job-id textarea, #job-id input');
        box.value = String(id);
        box.dispatchEvent(new Event('input', {bubbles: true}));
        box.dispatchEvent(new KeyboardEvent('keypress', {key: 'Enter', bubbles: true}));
    }""", job_id)
