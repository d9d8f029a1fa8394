"""The render farm on a real Ray runtime (CPU): a local runtime with two task slots, and a simulated
two-node cluster (Ray's own ``cluster_utils``). A 10 s clip in 1 s segments renders frame-exact with
audio; a Ray worker process killed mid-segment is retried; a killed driver resumes from its segments.

Skipped where Ray (the ``farm`` extra) is not installed.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest

ray = pytest.importorskip("ray")

from cli.main import main  # noqa: E402
from pipeline.jobs import farm_task, runner  # noqa: E402
from pipeline.jobs.farm import Farm, read_status  # noqa: E402
from pipeline.jobs.hold import FolderGate, Gate  # noqa: E402
from pipeline.jobs.store import JobStore  # noqa: E402
from pipeline.jobs.worker import run, start_in_thread  # noqa: E402
from pipeline.settings import Settings, apply_overrides  # noqa: E402
from tests import photos  # noqa: E402
from tests.timing import scaled  # noqa: E402
from tests.videos import count_frames, make_clip, stream_info  # noqa: E402

FAST = apply_overrides(Settings(), ["selector.mode=one", "execution.batch_size=1", "detector.size=320"])
REPO = Path(__file__).resolve().parent.parent
STORE_MB = 100  # Ray's object store lives in /dev/shm: keep it small


@pytest.fixture(scope="module")
def clip10(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_clip(tmp_path_factory.mktemp("clips") / "face10.mp4", seconds=10, size=(320, 240),
                     face_image=photos.astronaut())


@pytest.fixture
def farm_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTHONPATH", str(REPO))  # Ray's worker processes import facestation from here
    monkeypatch.setenv("FACESTATION_FARM_OBJECT_STORE_MB", str(STORE_MB))
    monkeypatch.setenv("FACESTATION_FARM_SEGMENT_SECONDS", "1")
    monkeypatch.setenv("RAY_AUTH_MODE", "disabled")  # a throw-away cluster on one machine


@pytest.fixture
def two_nodes(farm_env: None) -> Iterator[Any]:
    from ray.cluster_utils import Cluster

    cluster = Cluster(initialize_head=True, head_node_args={
        "num_cpus": 1, "object_store_memory": STORE_MB << 20, "include_dashboard": False})
    cluster.add_node(num_cpus=1, object_store_memory=STORE_MB << 20)
    cluster.wait_for_nodes()
    yield cluster
    if ray.is_initialized():
        ray.shutdown()
    cluster.shutdown()


def _shown(job_id: int, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    capsys.readouterr()
    assert main(["queue", "show", str(job_id), "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def _check_output(out: Path, clip: Path) -> None:
    assert count_frames(out) == count_frames(clip) == 300
    streams = {s["codec_type"]: s for s in stream_info(out)["streams"]}
    assert set(streams) == {"video", "audio"}
    assert abs(float(streams["audio"]["duration"]) - 10.0) <= 0.1


def _render_processes() -> list[psutil.Process]:
    """Ray worker processes running a segment right now (Ray titles them by the task)."""
    found = []
    for proc in psutil.process_iter(["cmdline"]):
        if " ".join(proc.info["cmdline"] or []).startswith("ray::render_segment"):
            found.append(proc)
    return found


def _until(ready: Any, handle: Any, store: JobStore, job_id: int, timeout: float = 300) -> Any:
    """Wait for ``ready()`` to be truthy (and return it) while the in-thread worker lives."""
    deadline = time.monotonic() + scaled(timeout)
    while not (value := ready()):
        assert time.monotonic() < deadline and handle.alive, store.get(job_id).log
        time.sleep(0.05)
    return value


def test_an_address_where_nothing_answers_exits_2_at_once(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["queue", "run", "--ray", "127.0.0.1:1", "--once"]) == 2
    err = capsys.readouterr().err
    # checked before ray.init, which would retry for minutes
    assert "cannot reach the Ray head at 127.0.0.1:1" in err and err.count("\n") == 1, err
    assert not ray.is_initialized()


@pytest.mark.slow
def test_local_runtime_two_slots_renders_frame_exact_on_two_workers(
        farm_env: None, clip10: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    store = JobStore()
    out = tmp_path / "out.mp4"
    job = store.add([photos.grace_hopper_path()], clip10, out, FAST)
    no_face = tmp_path / "grey.png"
    no_face.write_bytes(_grey_png())
    bad = store.add([no_face], clip10, tmp_path / "bad.mp4", FAST)
    farm = Farm.connect("local", slots=2)
    try:
        assert farm.slots == 2 and farm.task_resources == {"num_cpus": (os.cpu_count() or 1) / 2}
        status = read_status()  # what the System tab shows
        assert status is not None and status["slots"] == 2 and len(status["nodes"]) == 1
        assert run(store, "test/ray", once=True, execute=farm.execute) == 1
        # a node that cannot see a file gets it from the driver: same bytes
        fp = {"size": clip10.stat().st_size, "mtime_ns": 1}
        ray.get(farm.server.allow.remote([str(clip10)]))
        copy = farm_task.local_input(farm.server, str(clip10), fp)
        assert copy != clip10 and copy.read_bytes() == clip10.read_bytes()
        _check_model_shipping(farm, tmp_path, monkeypatch)
    finally:
        farm.close()
    assert read_status() is None
    done = store.get(job.id)
    assert done.state == "done", (done.error, done.log)
    assert done.log.count("the built-in classic swapper is in use") == 1, done.log  # the summary's notices
    _check_output(out, clip10)
    shown = _shown(job.id, capsys)
    assert [s["start"] for s in shown["segments"]] == list(range(0, 300, 30))
    assert sum(s["frames"] for s in shown["segments"]) == 300
    assert len({s["pid"] for s in shown["segments"]}) >= 2, shown["segments"]
    assert all(s["seconds"] > 0 and s["node"] for s in shown["segments"])
    assert len(list(runner.work_dir(job.id).glob("seg-*"))) == 10  # kept for a re-render of a stretch
    failed = store.get(bad.id)  # the job's own reason fails it, with that reason
    assert failed.state == "failed" and "face" in (failed.error or "").lower(), failed.error
    assert "Ray" not in (failed.error or "")


def _check_model_shipping(farm: Farm, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A node whose models folder lacks a file the job uses gets it from the driver, byte for byte."""
    from pipeline.models import catalog, store

    entry = next(e for e in catalog.CATALOG.values() if not e.builtin)
    on_driver = store.installed_path(entry)
    on_driver.write_bytes(b"weights" * 1000)
    ray.get(farm.server.allow.remote([str(on_driver)]))
    monkeypatch.setenv("FACESTATION_MODELS", str(tmp_path / "node-models"))
    shipped = farm_task.ship_models(farm.server, {entry.name: {"path": str(on_driver), "size": 7000}})
    assert shipped == [entry.name]
    assert store.installed_path(entry).read_bytes() == on_driver.read_bytes()
    assert farm_task.ship_models(farm.server, {entry.name: {"path": str(on_driver), "size": 7000}}) == []


def _grey_png() -> bytes:
    import cv2
    import numpy as np

    ok, data = cv2.imencode(".png", np.full((240, 320, 3), 128, np.uint8))
    assert ok
    return data.tobytes()


@pytest.mark.slow
def test_two_node_cluster_survives_a_killed_worker_process(
        two_nodes: Any, clip10: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("FACESTATION_FARM_SHIP", "1")  # segments come back through the object store
    store = JobStore()
    out = tmp_path / "out.mp4"
    job = store.add([photos.grace_hopper_path()], clip10, out, FAST)
    farm = Farm.connect(two_nodes.address)
    assert farm.slots == 2 and len(farm.nodes()) == 2
    hold = FolderGate(tmp_path / "hold")
    hold.folder.mkdir()
    hold.allow(2)  # the driver waits once two segments are recorded
    handle = start_in_thread(store, "test/ray", execute=farm.execute, hold=hold)
    try:
        _until(lambda: hold.reached() >= 2, handle, store, job.id)
        hold.hold_tasks(True)  # the next tasks wait in their Ray worker process, before they render
        hold.allow(None)  # the driver goes on and submits them
        waiting = _until(hold.waiting_tasks, handle, store, job.id)
        start, killed = min(waiting.items())
        assert killed in {p.pid for p in _render_processes()}  # a Ray worker process mid-task
        os.kill(killed, signal.SIGKILL)
        hold.hold_tasks(False)
        _until(lambda: store.get(job.id).finished, handle, store, job.id)
    finally:
        handle.stop()
        farm.close()
    done = store.get(job.id)
    assert done.state == "done", (done.error, done.log)
    _check_output(out, clip10)
    segs = _shown(job.id, capsys)["segments"]
    assert [s["start"] for s in segs] == list(range(0, 300, 30))
    assert len({s["node_id"] for s in segs}) == 2, segs  # both nodes rendered
    assert len({s["pid"] for s in segs} - {killed}) >= 2, segs  # the killed worker's node went on too
    assert killed not in {s["pid"] for s in segs if s["start"] == start}, segs  # its segment ran again


def _driver(address: str, env: dict[str, str]) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-m", "cli", "queue", "run", "--ray", address, "--once",
                             "--worker-id", "test/ray"], cwd=REPO, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


@pytest.mark.slow
def test_killed_driver_resumes_from_the_recorded_segments(
        two_nodes: Any, clip10: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = JobStore()
    out = tmp_path / "out.mp4"
    job = store.add([photos.grace_hopper_path()], clip10, out, FAST)
    hold = FolderGate(tmp_path / "hold")
    hold.folder.mkdir()
    hold.allow(3)  # the driver (another process) waits once three segments are recorded: kill it there
    driver = _driver(two_nodes.address, {**os.environ, "FACESTATION_TEST_HOLD": str(hold.folder)})
    deadline = time.monotonic() + scaled(300)
    while hold.reached() < 3:
        assert time.monotonic() < deadline and driver.poll() is None, store.get(job.id).log
        time.sleep(0.05)
    driver.send_signal(signal.SIGKILL)
    driver.wait()
    before = {s["start"]: s["pid"] for s in store.get(job.id).resume["segments"]}
    assert len(before) == 3 and store.get(job.id).state == "running" and not out.exists()
    driver = _driver(two_nodes.address, dict(os.environ))
    _, err = driver.communicate(timeout=scaled(300))
    assert driver.returncode == 0, err.decode()
    done = store.get(job.id)
    assert done.state == "done", (done.error, done.log)
    assert "resuming: 3 of 10 segments kept, 7 to render" in done.log, done.log
    _check_output(out, clip10)
    after = {s["start"]: s["pid"] for s in _shown(job.id, capsys)["segments"]}
    assert sorted(after) == list(range(0, 300, 30))
    assert all(after[s] == pid for s, pid in before.items())  # kept, not rendered again


@pytest.mark.slow
def test_a_node_that_leaves_has_its_segments_run_elsewhere(
        two_nodes: Any, clip10: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = JobStore()
    out = tmp_path / "out.mp4"
    job = store.add([photos.grace_hopper_path()], clip10, out, FAST)
    farm = Farm.connect(two_nodes.address)
    leaving = next(n for n in two_nodes.list_all_nodes() if n is not two_nodes.head_node)
    gate = Gate(after=2)  # the driver waits once two segments are recorded: the node leaves then
    handle = start_in_thread(store, "test/ray", execute=farm.execute, hold=gate)
    try:
        _until(gate.reached.is_set, handle, store, job.id)
        removed_after = len(store.get(job.id).resume["segments"])
        two_nodes.remove_node(leaving, allow_graceful=False)
        gate.open()
        _until(lambda: store.get(job.id).finished, handle, store, job.id)
    finally:
        handle.stop()
        farm.close()
    done = store.get(job.id)
    assert done.state == "done", (done.error, done.log)
    _check_output(out, clip10)
    segs = _shown(job.id, capsys)["segments"]
    assert [s["start"] for s in segs] == list(range(0, 300, 30))
    assert removed_after == 2  # 8 segments were left for the node that stayed
