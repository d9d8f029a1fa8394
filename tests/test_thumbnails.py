"""Issue 20, thumbnails, without a browser: the drawing functions (pipeline/thumbnails.py), a job's
cached frame for its Queue row, and the per-user links that serve it (webui/files.py, queue_tab)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import cv2
import numpy as np
import pytest

from pipeline import thumbnails
from pipeline.jobs.store import JobStore
from pipeline.settings import Settings
from tests.photos import grace_hopper, grace_hopper_path

GREEN = np.array(thumbnails.USED)  # BGR


def _near(image: np.ndarray, colour: Any, tolerance: int = 40) -> np.ndarray:
    return np.abs(image.astype(int) - np.asarray(colour, int)).max(axis=2) <= tolerance


def test_fit_scales_down_only_and_keeps_the_aspect() -> None:
    frame = np.zeros((600, 300, 3), np.uint8)
    small, scale = thumbnails.fit(frame, 200)
    assert small.shape == (200, 100, 3) and scale == pytest.approx(1 / 3)
    same, scale = thumbnails.fit(frame, 1000)
    assert same.shape == frame.shape and scale == 1.0 and same is not frame
    assert thumbnails.fit_height(frame, 60).shape == (60, 30, 3)


def test_draw_boxes_draws_the_used_face_green_on_a_copy() -> None:
    frame = np.full((200, 300, 3), 90, np.uint8)
    drawn = thumbnails.draw_boxes(frame, [(20, 30, 120, 150), (180, 40, 260, 120)], used=0)
    assert (frame == 90).all()  # the input is untouched
    assert _near(drawn[30:31, 20:121], GREEN).all()  # the used face's top edge is green
    assert _near(drawn[40:41, 180:261], thumbnails.UNUSED).all()  # the other face: amber
    assert not _near(drawn[60:100, 40:100], GREEN).any()  # inside the box: nothing drawn
    assert not _near(drawn[40:41, 180:261], GREEN).any()


def test_source_thumbnails_box_the_face_found_and_say_when_there_is_none(tmp_path: Path) -> None:
    wall = tmp_path / "wall.png"
    cv2.imwrite(str(wall), np.full((300, 400, 3), 128, np.uint8))
    broken = tmp_path / "broken.jpg"
    broken.write_bytes(b"not a picture")
    face, empty, bad = thumbnails.source_thumbnails([grace_hopper_path(), wall, broken], Settings(), size=200)
    assert face.caption == "grace_hopper.jpg: face found" and face.faces == 1
    assert max(face.image.shape[:2]) == 200
    green = _near(face.image[:, :, ::-1], GREEN)  # RGB out: back to BGR to compare
    ys, xs = np.nonzero(green)
    assert len(xs) > 100  # the box is drawn ...
    h, w = face.image.shape[:2]
    assert 0.1 * w < xs.mean() < 0.9 * w and ys.min() < 0.6 * h  # ... around the face (upper middle)
    assert empty.caption == "wall.png: no face found in this photo" and empty.faces == 0
    assert not _near(empty.image[:, :, ::-1], GREEN).any()
    assert bad.caption.startswith("broken.jpg: ") and bad.faces == 0


def test_pair_image_puts_the_source_left_an_arrow_between_and_the_face_right(tmp_path: Path) -> None:
    face = tmp_path / "ref-face.png"
    cv2.imwrite(str(face), np.full((80, 60, 3), (0, 0, 255), np.uint8))  # red in BGR
    pair = thumbnails.pair_image(grace_hopper_path(), face, height=120)
    assert pair.shape[0] == 120
    photo = thumbnails.fit_height(grace_hopper(), 120)[:, :, ::-1]
    assert np.array_equal(pair[:, : photo.shape[1]], photo)  # the source photo, left
    assert _near(pair[:, -90:], (255, 0, 0)).all()  # the face, right, scaled up to the height (RGB out)
    gap = pair[:, photo.shape[1]: pair.shape[1] - 90]
    assert _near(gap, thumbnails.ARROW[::-1]).any()  # the arrow between them
    with pytest.raises(thumbnails.UserError):
        thumbnails.pair_image(grace_hopper_path(), tmp_path / "gone.png")


def _job(store: JobStore, tmp_path: Path, output: Path, owner: str = "alice") -> Any:
    return store.add([str(grace_hopper_path())], str(grace_hopper_path()), str(output), Settings(),
                     owner=owner)


def _done(store: JobStore, job_id: int) -> Any:
    lease = store.claim_next("w")
    assert lease is not None and lease.id == job_id
    lease.finish("done", render_s=1.0, fps=1.0)
    return store.get(job_id)


def test_a_done_jobs_thumbnail_is_its_output_decoded_once(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.videos import make_clip

    store = JobStore(tmp_path / "q.sqlite3")
    clip = make_clip(tmp_path / "out.mp4", seconds=1.0, size=(320, 240), audio=False)
    job = _job(store, tmp_path, clip)
    assert thumbnails.job_thumbnail(job) is None  # queued: nothing yet
    job = _done(store, job.id)
    path = thumbnails.job_thumbnail(job, height=60)
    assert path is not None and thumbnails.is_job_thumbnail(path, job.id)
    assert not thumbnails.is_job_thumbnail(path, job.id + 1)
    picture = cv2.imread(str(path))
    assert picture.shape[:2] == (60, 80)

    def no_decode(_: Path) -> Any:
        raise AssertionError("decoded again")

    monkeypatch.setattr(thumbnails, "_middle_frame", no_decode)
    assert thumbnails.job_thumbnail(job, height=60) == path  # the poller's next tick: found by name


def test_an_image_output_a_failed_job_and_an_undecodable_output(tmp_path: Path) -> None:
    store = JobStore(tmp_path / "q.sqlite3")
    still = tmp_path / "out.png"
    cv2.imwrite(str(still), np.full((100, 200, 3), (255, 0, 0), np.uint8))
    done = _done(store, _job(store, tmp_path, still).id)
    path = thumbnails.job_thumbnail(done, height=40)
    assert path is not None and cv2.imread(str(path)).shape[:2] == (40, 80)
    bogus = tmp_path / "bogus.mp4"
    bogus.write_bytes(b"not a video")
    broken = _done(store, _job(store, tmp_path, bogus).id)
    assert thumbnails.job_thumbnail(broken) is None  # no traceback, no file
    failed = _job(store, tmp_path, tmp_path / "never.mp4")
    lease = store.claim_next("w")
    assert lease is not None
    lease.fail("boom")
    assert thumbnails.job_thumbnail(store.get(failed.id)) is None


def test_a_running_jobs_thumbnail_follows_its_newest_frame(tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    from pipeline.jobs import service

    store = JobStore(tmp_path / "q.sqlite3")
    job = _job(store, tmp_path, tmp_path / "out.mp4")
    lease = store.claim_next("w")
    assert lease is not None
    running = store.get(job.id)
    frames = {"seg-0": np.full((120, 160, 3), (200, 10, 10), np.uint8)}  # RGB, as latest_frame gives
    monkeypatch.setattr(service, "latest_frame", lambda j: next(iter(frames.items()), None))
    first = thumbnails.job_thumbnail(running)
    assert first is not None and cv2.imread(str(first))[0, 0, 0] < 60  # blue low: it was red in RGB
    frames.clear()
    frames["seg-1"] = np.full((120, 160, 3), (10, 10, 200), np.uint8)
    second = thumbnails.job_thumbnail(running)
    assert second is not None and second != first and not first.exists()  # the old frame is gone
    assert cv2.imread(str(second))[0, 0, 0] > 150
    frames.clear()
    assert thumbnails.job_thumbnail(running) is None  # no segment recorded (yet)


# ---------------------------------------------------------------- the links (webui)


def as_user(name: str) -> Any:
    return SimpleNamespace(username=name, cookies={})


def test_row_thumbnails_are_links_for_their_owner_only_and_stay_the_same(tmp_path: Path) -> None:
    pytest.importorskip("gradio")
    from webui import queue_tab
    from webui.common import Ctx, UiConfig

    config = UiConfig(users=(("alice", "pa"), ("bob", "pb")), worker=False)
    ctx = Ctx(config, tmp_path / "out", JobStore(tmp_path / "q.sqlite3"))
    still = tmp_path / "out.png"
    cv2.imwrite(str(still), np.full((100, 200, 3), 255, np.uint8))
    done = _done(ctx.store, _job(ctx.store, tmp_path, still).id)
    alice = as_user("alice")
    shown = queue_tab.table(ctx, queue_tab.visible_jobs(ctx, alice), "", alice)
    links = queue_tab.row_thumbnails(ctx, [done], alice)
    assert links[done.id] in shown and 'class="fs-row-thumb"' in shown
    again = queue_tab.row_thumbnails(ctx, [done], alice)
    assert again == links  # the 1-s poll shows the same link: the browser keeps the picture
    token = links[done.id].split("/")[-2]
    link = ctx.links.resolve(token, "alice", "")
    assert link is not None and link.cacheable and queue_tab.link_valid(ctx, link)
    assert ctx.links.resolve(token, "bob", "") is None  # another user's: refused (404 at the route)
    assert str(tmp_path) not in shown
    assert queue_tab.row_thumbnails(ctx, queue_tab.visible_jobs(ctx, as_user("bob")), as_user("bob")) == {}
    queue_tab.job_action(ctx, "delete", done.id, alice)
    assert ctx.links.resolve(token, "alice", "") is None  # deleting the job revokes its links


def test_the_chosen_people_show_as_faces_and_numbered_pairs_never_as_paths(tmp_path: Path) -> None:
    pytest.importorskip("gradio")
    from webui import faces

    refs = []
    for i, colour in enumerate([(0, 0, 255), (255, 0, 0)]):
        refs.append(tmp_path / f"ref-{i}.png")
        cv2.imwrite(str(refs[-1]), np.full((80, 60, 3), colour, np.uint8))
    photo = str(grace_hopper_path())
    alone = faces.chosen_gallery([], "reference", str(refs[0]), "")
    assert alone["visible"]
    assert [c for _, c in alone["value"]] == ["chosen person: only this face is replaced"]
    assert not faces.chosen_gallery([], "many", str(refs[0]), "")["visible"]  # not in reference mode
    pairs = faces.chosen_gallery([photo], "many", "", f"{refs[0]}, {refs[1]}")
    captions = [c for _, c in pairs["value"]]
    assert captions == ["1: grace_hopper.jpg → this face", "2: (add source photo 2) → this face"]
    first, second = (image for image, _ in pairs["value"])
    assert _near(first[:, -50:], (255, 0, 0)).all()  # source 1 -> the first mapped face (red), in order
    assert _near(second, (0, 0, 255)).all()  # the second face alone (blue), no photo for it yet
    assert not any(str(tmp_path) in c for c in captions)
    gone = faces.chosen_gallery([photo], "many", "", str(tmp_path / "gone.png"))
    assert not gone["visible"]  # a face file gone: left out, no traceback
