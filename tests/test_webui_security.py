"""A shared workstation over HTTP, with three accounts (alice, bob, carol the admin) against a real server:
results and uploads private to their owner, every route behind the login, presets per user, admin only
when named, one answer for a job that is missing or not yours, login throttling, HTTPS on --listen."""

from __future__ import annotations

import hashlib
import json
import os
import re
import secrets
import ssl
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

gr = pytest.importorskip("gradio")
httpx = pytest.importorskip("httpx")

from pipeline import presets  # noqa: E402
from pipeline.errors import UserError  # noqa: E402
from pipeline.settings import Settings  # noqa: E402
from tests.browser.helpers import free_port, running_app  # noqa: E402
from tests.photos import grace_hopper_path  # noqa: E402
from tests.timing import scaled, wait_until  # noqa: E402

USERS = (("alice", "pa"), ("bob", "pb"), ("carol", "pc"))
REPO = Path(__file__).resolve().parents[1]


def login(url: str, user: str, password: str) -> httpx.Client:
    client = httpx.Client(base_url=url, timeout=scaled(60), verify=False)
    r = client.post("/login", data={"username": user, "password": password})
    assert r.status_code == 200, (user, r.status_code, r.text)
    return client


SESSIONS: dict[int, str] = {}  # id(client) -> the Gradio session hash of its page


def event(client: httpx.Client, app: Any, component: Any, data: list[Any], trigger: str = "click",
          fn_index: int | None = None) -> Any:
    """Fire a UI event as the browser does (queue/join, then read the event stream) in the client's page
    session (opened with the page's load events); returns its outputs, or raises UserError with the
    message the UI would show."""
    if id(client) not in SESSIONS:
        SESSIONS[id(client)] = secrets.token_hex(6)
        for i, loaded in app.blocks.fns.items():  # each load event with no inputs, by its own index
            if (app.blocks._id, "load") in loaded.targets and not loaded.inputs:
                event(client, app, app.blocks, [], "load", fn_index=i)
    if fn_index is None:
        fn_index = next(i for i, f in app.blocks.fns.items() if (component._id, trigger) in f.targets)
    session = SESSIONS[id(client)]
    body = {"data": data, "fn_index": fn_index, "session_hash": session, "event_data": None,
            "trigger_id": component._id}
    r = client.post("/gradio_api/queue/join", json=body)
    assert r.status_code == 200, r.text
    with client.stream("GET", "/gradio_api/queue/data", params={"session_hash": session}) as stream:
        for line in stream.iter_lines():
            msg = json.loads(line[5:]) if line.startswith("data:") else {}
            if msg.get("msg") == "process_completed":
                if not msg.get("success"):
                    raise UserError(str(msg.get("output", {}).get("error")))
                return msg["output"]["data"]
    raise AssertionError("the event stream ended without a result")


def select(client: httpx.Client, app: Any, job_id: int) -> Any:
    """Select a job as a click on its row does (its number into the hidden #job-id box, then Enter): the
    outputs are the selection's text, the before / after player and the download link."""
    return event(client, app, app.components["queue"]["job_id"], [str(job_id)], "submit")


def settings_values(app: Any) -> list[Any]:
    return [c.value for c in app.components["settings"].values()]


def done_job(app: Any, owner: str, tmp_path: Path, content: bytes = b"alice's result") -> Any:
    out = app.ctx.outputs / owner / "holiday-swap.mp4"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(content)
    (tmp_path / "t.mp4").write_bytes(b"the target")
    store = app.ctx.store
    job = store.add([str(grace_hopper_path())], str(tmp_path / "t.mp4"), str(out), Settings(), owner=owner)
    lease = store.claim_next("w")
    assert lease is not None and lease.id == job.id
    lease.finish("done")
    return store.get(job.id)


@pytest.fixture()
def studio(tmp_path: Path) -> Iterator[tuple[str, Any]]:
    with running_app(users=USERS, admins=frozenset({"carol"}), worker=False, data=tmp_path / "data",
                     outputs=tmp_path / "outputs") as running:
        yield running


# ---------------------------------------------------------------- 1. results and uploads per user


def test_a_result_link_serves_its_owner_only_and_dies_with_the_job(studio: tuple[str, Any],
                                                                   tmp_path: Path) -> None:
    url, app = studio
    job = done_job(app, "alice", tmp_path)
    alice, bob, carol = (login(url, u, p) for u, p in USERS)
    anon = httpx.Client(base_url=url, timeout=scaled(30))
    q = app.components["queue"]
    _, player, shown, _ = select(alice, app, job.id)  # selecting a done job: before / after, and its link
    href = re.search(r'href="([^"]+)"', shown).group(1)  # type: ignore[union-attr]
    before, after = re.findall(r'<video [^>]*src="([^"]+)"', player)
    def downloads() -> list[Any]:
        return [e.get("job") for e in app.ctx.audit.entries() if e["action"] == "download"]

    assert downloads() == []  # selecting a job (and minting its links) is not a download
    assert (alice.get(before).content, alice.get(after).content) == (b"the target", b"alice's result")
    assert "inline" in alice.get(after).headers["content-disposition"]  # played in the page
    for other in (bob, carol, anon):
        assert other.get(before).status_code in (401, 404) and other.get(after).status_code in (401, 404)
    uploads = os.environ.get("GRADIO_TEMP_DIR", "/tmp/gradio")  # Gradio's cache (the run's own: conftest)
    assert uploads not in href and "/tmp/gradio" not in href and str(app.ctx.outputs) not in href
    assert alice.get(href).content == b"alice's result"
    assert "attachment" in alice.get(href).headers["content-disposition"]
    assert downloads() == [job.id, job.id]  # the two GETs of the download link; the player's are not
    assert bob.get(href).status_code == 404  # another user's session
    assert carol.get(href).status_code == 404  # the admin too: a link is for the one who asked
    assert anon.get(href).status_code == 401  # no session
    second = login(url, "alice", "pa")
    assert second.get(href).status_code == 404  # alice's other session
    # the file never entered Gradio's shared cache: no file= path serves it to anyone
    for client in (alice, bob):
        assert client.get(f"/gradio_api/file={job.output}").status_code == 403
    event(alice, app, q["delete"], [str(job.id)])
    assert alice.get(href).status_code == 404  # the job was deleted: its links are revoked
    assert alice.get(before).status_code == alice.get(after).status_code == 404  # the player's too
    actions = [(e["user"], e["action"], e.get("job")) for e in app.ctx.audit.entries()]
    assert ("alice", "login", None) in actions and downloads() == [job.id, job.id]  # refused ones are not
    assert ("alice", "delete", job.id) in actions and all(e["time"] for e in app.ctx.audit.entries())


def test_uploads_and_event_files_are_served_to_their_owner_only(studio: tuple[str, Any]) -> None:
    url, app = studio
    alice, bob = login(url, *USERS[0]), login(url, *USERS[1])
    anon = httpx.Client(base_url=url, timeout=scaled(30))
    photo = grace_hopper_path().read_bytes()
    path = alice.post("/gradio_api/upload", files={"files": ("me.jpg", photo, "image/jpeg")}).json()[0]
    assert alice.get(f"/gradio_api/file={path}").content == photo
    assert bob.get(f"/gradio_api/file={path}").status_code == 403
    assert anon.get(f"/gradio_api/file={path}").status_code == 401
    # a file an event hands to alice (an exported preset) goes through Gradio's cache: hers only
    presets.save("mine", Settings(), "alice's", owner="alice")
    exported = event(alice, app, app.components["presets"]["export"], ["mine"])[0]
    assert exported and alice.get(f"/gradio_api/file={exported['path']}").status_code == 200
    assert bob.get(f"/gradio_api/file={exported['path']}").status_code == 403


# ---------------------------------------------------------------- 5. every route behind the login


def gate_status(app: Any, path: str, client: str) -> int:
    """What the gate answers a request without a login from ``client`` (the ASGI call, no socket)."""
    import asyncio

    from webui.auth import Gate

    sent: list[dict[str, Any]] = []

    async def inner(scope: Any, receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": []})

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b""}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {"type": "http", "method": "GET", "path": path, "headers": [], "client": (client, 1234)}
    asyncio.run(Gate(inner, app.ctx.guard)(scope, receive, send))
    return int(sent[0]["status"])


def all_routes(routes: list[Any]) -> Iterator[Any]:
    """The app's routes, those of included routers (Gradio's /gradio_api router) too."""
    for route in routes:
        inner = getattr(route, "original_router", None)
        if inner is not None:
            yield from all_routes(inner.routes)
        else:
            yield route


def test_every_route_answers_401_without_a_login(studio: tuple[str, Any]) -> None:
    url, app = studio
    public = {"/", "/login", "/login/", "/favicon.ico", "/theme.css", "/gradio_api/theme.css",
              "/manifest.json", "/robots.txt", "/assets/{path:path}", "/svelte/{path:path}",
              "/static/{path:path}", "/pwa_icon", "/pwa_icon/{size}"}
    loopback_only = {"/gradio_api/startup-events"}  # Gradio's launch() calls it, without a login, once
    anon = httpx.Client(base_url=url, timeout=scaled(30))
    checked = []
    for route in all_routes(app.blocks.server_app.routes):
        path = getattr(route, "path", "")
        if not path or path in public or path in loopback_only:
            continue
        concrete = re.sub(r"\{[^}]+\}", "x", path)
        for method in sorted(getattr(route, "methods", None) or {"GET"}):
            r = anon.request(method, concrete, json={"session_hash": "x", "fn_index": 0, "event_id": "x"})
            assert r.status_code == 401, (method, path, r.status_code)
            checked.append((method, path))
    named = {p for _, p in checked}
    assert "/gradio_api/startup-events" in loopback_only and gate_status(app, "/gradio_api/startup-events",
                                                                         "10.0.0.5") == 401
    assert {"/gradio_api/cancel", "/gradio_api/reset", "/config", "/gradio_api/upload",
            "/facestation/result/{token}/{name}", "/facestation/live/offer",
            "/facestation/live/stats/{token}"} <= named
    assert len(checked) > 40
    # the login page itself still loads
    assert anon.get("/").status_code == 200


# ---------------------------------------------------------------- 4. job ids cannot be probed


def test_a_missing_job_and_someone_elses_job_get_the_same_answer(studio: tuple[str, Any],
                                                                 tmp_path: Path) -> None:
    url, app = studio
    job = done_job(app, "alice", tmp_path)
    bob, carol = login(url, *USERS[1]), login(url, *USERS[2])
    q = app.components["queue"]
    for action in ("cancel", "retry", "up", "delete", "select"):
        answers = []
        for job_id in (job.id, 999):
            with pytest.raises(UserError) as err:
                select(bob, app, job_id) if action == "select" else event(bob, app, q[action], [str(job_id)])
            answers.append(str(err.value).replace(str(job_id), "N"))
        assert answers[0] == answers[1] == "no job N of yours in the queue", action
    assert "holiday-swap.mp4" in select(carol, app, job.id)[2]  # the admin may


# ---------------------------------------------------------------- 2. presets per user


def refusal(client: httpx.Client, app: Any, component: Any, data: list[Any]) -> str:
    """A Presets action refused: said in the presets' message line (its second output), never an error."""
    said = str(event(client, app, component, data)[1])
    assert said.startswith("⚠ "), said
    return said


def test_presets_are_per_user_and_studio_presets_are_published_by_an_admin(studio: tuple[str, Any]) -> None:
    url, app = studio
    alice, bob, carol = (login(url, u, p) for u, p in USERS)
    p = app.components["presets"]
    values = settings_values(app)
    event(alice, app, p["save"], ["look", "alice's look", "", "", *values])
    event(bob, app, p["save"], ["look", "bob's look", "", "", *values])  # bob's own, next to hers
    assert presets.read("look", owner="alice").description == "alice's look"
    assert presets.read("look", owner="bob").description == "bob's look"
    event(bob, app, p["delete"], ["look"])
    assert presets.read("look", owner="alice").description == "alice's look"  # bob deleted his own only
    event(alice, app, p["save"], ["alice only", "", "", "", *values])
    with pytest.raises(UserError, match="alice only"):  # not in bob's list (Gradio refuses it), nor his shelf
        event(bob, app, p["delete"], ["alice only"])
    with pytest.raises(UserError, match="no preset named 'alice only'"):
        presets.delete("alice only", owner="bob")
    assert presets.read("alice only", owner="alice")
    assert "only an admin" in refusal(bob, app, p["publish"], ["house look", "", "", "", *values])
    event(carol, app, p["publish"], ["house look", "the studio's", "", "", *values])
    assert "house look" in [i.name for i in presets.list_presets("bob") if i.studio]
    event(bob, app, app.components["tabs"]["Presets"], [], "select")  # bob opens the tab: it is in his list
    assert "only an admin can delete it" in refusal(bob, app, p["delete"], ["house look"])
    # a studio name means one thing
    assert "studio preset" in refusal(bob, app, p["save"], ["house look", "", "", "", *values])
    event(carol, app, p["delete"], ["house look"])
    assert "house look" not in [i.name for i in presets.list_presets("bob")]
    assert "look" not in [i.name for i in presets.list_presets()]  # the local (CLI) shelf is apart


def test_cli_presets_still_work_for_the_local_user(capsys: pytest.CaptureFixture[str]) -> None:
    from cli.main import main

    assert main(["presets", "save", "cli look", "--set", "detector.score=0.6"]) == 0
    assert presets.load("cli look").detector.score == pytest.approx(0.6)
    assert "cli look" not in [i.name for i in presets.list_presets("alice")]
    assert main(["presets", "delete", "cli look"]) == 0


# ---------------------------------------------------------------- 3. admin only when named


def test_admin_only_when_named(tmp_path: Path) -> None:
    import argparse

    from cli import ui as ui_cli

    def config(*argv: str) -> Any:
        parser = argparse.ArgumentParser()
        ui_cli.register(parser.add_subparsers())
        return ui_cli.config_from_args(parser.parse_args(["ui", "--listen", *argv]))

    logins = tmp_path / "logins.txt"
    logins.write_text("alice:pa\nbob:p b\n")
    assert config("--auth-file", str(logins)).admins == frozenset()  # the first line is nobody special
    assert config("--auth-file", str(logins), "--admin", "bob").admins == frozenset({"bob"})
    logins.write_text("alice:pa\nadmin carol:pc:x\n\tuser  bob:pb\n")
    cfg = config("--auth-file", str(logins))
    assert cfg.users == (("alice", "pa"), ("carol", "pc:x"), ("bob", "pb"))
    assert cfg.admins == frozenset({"carol"})
    logins.write_text("boss carol:pc\n")
    with pytest.raises(UserError, match="unknown role 'boss'"):
        config("--auth-file", str(logins))


# ---------------------------------------------------------------- 6. HTTPS and login throttling


def test_listen_serves_https_with_a_generated_certificate_and_refuses_password_guessing(
        tmp_path: Path) -> None:
    logins = tmp_path / "logins.txt"
    logins.write_text("alice:alice-pw\nbob:bob-pw\nadmin carol:carol-pw\n")
    port = free_port()
    env = {**os.environ, "FACESTATION_DATA": str(tmp_path / "data"), "GRADIO_ANALYTICS_ENABLED": "False",
           "PYTHONPATH": str(REPO)}
    cmd = [sys.executable, "-m", "cli.main", "ui", "--listen", "--bind", "127.0.0.1", "--port", str(port),
           "--auth-file", str(logins), "--no-browser", "--no-worker"]
    proc = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True)
    url = f"https://127.0.0.1:{port}"
    try:
        def up() -> bool:
            assert proc.poll() is None, proc.stdout.read() if proc.stdout else ""
            try:
                return httpx.get(url + "/", verify=False, timeout=scaled(5)).status_code == 200
            except httpx.TransportError:
                return False

        wait_until(up, 120, "the HTTPS server to come up", every=0.5)
        plain = httpx.get(f"http://127.0.0.1:{port}/", timeout=scaled(5))  # no plain HTTP on the network:
        assert (plain.status_code, plain.text) == (307, f"This server speaks https: open {url}/\n")  # a hint
        der = ssl.PEM_cert_to_DER_cert(ssl.get_server_certificate(("127.0.0.1", port)))
        served = ":".join(f"{b:02X}" for b in hashlib.sha256(der).digest())

        statuses = []
        with httpx.Client(base_url=url, verify=False, timeout=scaled(30)) as guesser:
            for n in range(30):
                statuses.append(guesser.post("/login", data={"username": "alice", "password": f"guess{n}"})
                                .status_code)
            right = guesser.post("/login", data={"username": "alice", "password": "alice-pw"}).status_code
        assert set(statuses[:3]) == {400} and statuses[-10:] == [429] * 10
        assert right == 429  # refused for a while, even with the right password
        assert login(url, "bob", "bob-pw").get("/config").status_code == 200  # (same address: not yet locked)
    finally:
        proc.terminate()
        output = proc.communicate(timeout=scaled(30))[0]
    assert f"fingerprint {served}" in output
    assert "accounts: alice, bob, carol; admin (sees every job): carol" in output
    assert "alice-pw" not in output and "carol-pw" not in output
    assert "login failed for 'alice'" in output and "locked" in output
    assert (tmp_path / "data" / "tls" / "facestation-key.pem").stat().st_mode & 0o077 == 0


def test_plain_http_to_the_https_port_gets_one_line_and_https_works_beside_it(tmp_path: Path) -> None:
    """A colleague typing http:// (or leaving it off) is told, in one line and a redirect, to use https://;
    the same port still serves the page, a login, an upload, the queue's event stream, a result and the
    live page's signalling over HTTPS, from uvicorn's own connections (webui/https_port.py)."""
    with running_app(users=USERS, self_signed=True, worker=False, data=tmp_path / "data",
                     outputs=tmp_path / "outputs") as (plain_url, app):
        url = plain_url.replace("http://", "https://")
        told = httpx.get(plain_url + "/gradio_api/info?x=1", timeout=scaled(30))
        assert told.status_code == 307 and told.headers["location"] == url + "/gradio_api/info?x=1"
        assert told.text == f"This server speaks https: open {url}/gradio_api/info?x=1\n"
        assert "cache-control" in told.headers  # temporary and not kept: the host may serve http there later
        assert httpx.get(url + "/", verify=False, timeout=scaled(30)).status_code == 200  # the login page
        alice = login(url, "alice", "pa")
        assert alice.get("/config").status_code == 200
        photo = grace_hopper_path().read_bytes()
        upload = {"files": ("me.jpg", photo, "image/jpeg")}
        uploaded = alice.post("/gradio_api/upload", files=upload).json()[0]
        assert alice.get(f"/gradio_api/file={uploaded}").content == photo
        job = done_job(app, "alice", tmp_path)
        shown = select(alice, app, job.id)[2]  # through queue/join and the event stream
        href = re.search(r'href="([^"]+)"', shown).group(1)  # type: ignore[union-attr]
        assert alice.get(href).content == b"alice's result"
        offer = alice.post("/facestation/live/offer", content=b"not json")  # the live page's signalling
        assert offer.status_code == 400 and "not JSON" in offer.json()["detail"]
        again = httpx.get(plain_url + "/", timeout=scaled(30))  # plain http once more, after all that
        assert again.status_code == 307 and again.headers["location"] == url + "/"


def test_the_plain_answer_names_the_https_url_and_echoes_nothing_unsafe() -> None:
    from webui.https_port import plain_answer

    def answer(head: bytes) -> tuple[str, str]:
        status, _, rest = plain_answer(head, ("192.168.1.23", 7860)).decode().partition("\r\n")
        headers, _, body = rest.partition("\r\n\r\n")
        return status + " " + dict(h.split(": ", 1) for h in headers.split("\r\n"))["Location"], body

    assert answer(b"GET /a?b=1 HTTP/1.1\r\nHost: studio.lan:7860\r\n\r\n") == (
        "HTTP/1.1 307 Temporary Redirect https://studio.lan:7860/a?b=1",
        "This server speaks https: open https://studio.lan:7860/a?b=1\n")
    # no Host, a forged one, a strange target: the port's own address and the root
    for head in (b"GET / HTTP/1.0\r\n\r\n", b"GET / HTTP/1.1\r\nHost: a b<script>\r\n\r\n",
                 b"GET http://x/ HTTP/1.1\r\n\r\n", b"\x00garbage", b""):
        assert answer(head)[0].endswith(" https://192.168.1.23:7860/"), head
    assert answer(b"GET / HTTP/1.1\r\nHost: [::1]:7860\r\n\r\n")[0].endswith(" https://[::1]:7860/")


def test_plain_http_on_the_network_only_when_asked(tmp_path: Path) -> None:
    import argparse

    from cli import ui as ui_cli
    from webui.app import serve
    from webui.common import UiConfig

    parser = argparse.ArgumentParser()
    ui_cli.register(parser.add_subparsers())
    cfg = ui_cli.config_from_args(parser.parse_args(["ui", "--listen", "--auth", "a:b"]))
    assert cfg.self_signed and not cfg.insecure and cfg.host == "0.0.0.0"
    cfg = ui_cli.config_from_args(parser.parse_args(["ui", "--listen", "--auth", "a:b", "--insecure"]))
    assert not cfg.tls and cfg.insecure
    with pytest.raises(UserError, match="both --ssl-certfile and --ssl-keyfile"):
        ui_cli.config_from_args(parser.parse_args(["ui", "--listen", "--auth", "a:b", "--ssl-certfile", "x"]))
    with pytest.raises(UserError, match="plain HTTP"):
        serve(UiConfig(host="0.0.0.0", users=(("a", "b"),), worker=False), block=False)  # noqa: S104


def test_throttle_slows_then_locks_an_account_and_an_address_for_a_while() -> None:
    from webui.auth import Throttle, ThrottlePolicy

    now = [0.0]
    throttle = Throttle(ThrottlePolicy(slow_after=2, delay_s=0.5, max_delay_s=1.0, account_lock_after=4,
                                       address_lock_after=6, window_s=60, lock_s=100), clock=lambda: now[0])
    delays = []
    for _ in range(4):
        assert throttle.refused_for("alice", "10.0.0.9") == 0
        delays.append(throttle.delay("alice", "10.0.0.9"))
        throttle.failed("alice", "10.0.0.9")
    assert delays == [0.0, 0.0, 0.5, 1.0]  # slowed after two failures
    assert throttle.refused_for("Alice", "10.0.0.7") == 100  # the account is locked, from any address
    assert throttle.refused_for("bob", "10.0.0.9") == 0  # the address is not (yet)
    for user in ("bob", "carol"):
        throttle.failed(user, "10.0.0.9")
    assert throttle.refused_for("dave", "10.0.0.9") == 100  # six failures from one address: it is locked
    now[0] = 101.0
    assert throttle.refused_for("alice", "10.0.0.9") == 0  # ... for a while
    throttle.failed("erin", "10.0.0.8")
    throttle.succeeded("erin", "10.0.0.8")
    assert throttle.delay("erin", "10.0.0.8") == 0


def test_nothing_handed_out_survives_a_restart(tmp_path: Path) -> None:
    config = {"users": USERS, "worker": False, "data": tmp_path / "data", "outputs": tmp_path / "outputs"}
    with running_app(**config) as (url, app):
        job = done_job(app, "alice", tmp_path)
        alice = login(url, *USERS[0])
        upload = {"files": ("me.jpg", b"alice" * 100, "image/jpeg")}
        path = alice.post("/gradio_api/upload", files=upload).json()[0]
        href = re.search(r'href="([^"]+)"', select(alice, app, job.id)[2]).group(1)  # type: ignore[union-attr]
        assert alice.get(href).status_code == 200 and alice.get(f"/gradio_api/file={path}").status_code == 200
    with running_app(**config) as (url, app):
        for user, password in USERS:  # alice included: the links and cache entries of the last run are gone
            client = login(url, user, password)
            assert client.get(href).status_code == 404
            assert client.get(f"/gradio_api/file={path}").status_code == 403


def test_the_page_says_who_is_signed_in_and_offers_a_log_out() -> None:
    from types import SimpleNamespace

    from webui.app import build, signed_in
    from webui.common import UiConfig

    cfg = UiConfig(users=(("alice", "a"), ("carol", "c")), admins=frozenset({"carol"}), worker=False)
    app = build(cfg)
    ctx = app.ctx
    assert signed_in(ctx, SimpleNamespace(username="alice")) == "signed in as **alice**"  # type: ignore[arg-type]
    assert "admin" in signed_in(ctx, SimpleNamespace(username="carol"))  # type: ignore[arg-type]
    buttons = [b for b in app.blocks.blocks.values() if getattr(b, "elem_id", None) == "logout"]
    assert len(buttons) == 1 and buttons[0].link == "/logout" and buttons[0].visible
    local = build(UiConfig(worker=False))
    assert signed_in(local.ctx, None) == ""
    assert not [b for b in local.blocks.blocks.values() if getattr(b, "elem_id", None) == "logout"][0].visible


def test_start_up_names_the_machines_real_addresses(monkeypatch: pytest.MonkeyPatch) -> None:
    import socket
    from types import SimpleNamespace

    import psutil

    from cli.ui import urls

    def addr(family: socket.AddressFamily, address: str) -> SimpleNamespace:
        return SimpleNamespace(family=family, address=address)

    fake = {"lo": [addr(socket.AF_INET, "127.0.0.1")],
            "eth0": [addr(socket.AF_INET, "192.168.1.23"), addr(socket.AF_INET6, "fe80::1")]}
    monkeypatch.setattr(psutil, "net_if_addrs", lambda: fake)
    assert urls("https", "0.0.0.0", 7860) == ["https://192.168.1.23:7860", "https://127.0.0.1:7860"]
    assert urls("http", "127.0.0.1", 7861) == ["http://127.0.0.1:7861"]
    assert not any("<this host>" in u for u in urls("https", "0.0.0.0", 1))


def test_log_out_ends_the_session(studio: tuple[str, Any]) -> None:
    url, _app = studio
    alice = login(url, *USERS[0])
    assert alice.get("/config").status_code == 200
    alice.get("/logout")
    assert alice.get("/config").status_code == 401
