"""The render farm's parts that need no Ray runtime: the address and the plan, resume records that a farm
fills out of order, `queue show`, and `--ray` without Ray installed (exit 2 with the install command)."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pytest

from cli.main import main
from pipeline.errors import UserError
from pipeline.jobs import farm, segments
from pipeline.jobs.farm_task import FileServer, SegmentDone, task_settings
from pipeline.jobs.resume import ResumeRecord
from pipeline.jobs.service import open_store
from pipeline.settings import Settings, apply_overrides
from tests import photos
from tests.videos import make_clip

FAST = apply_overrides(Settings(), ["selector.mode=one", "execution.batch_size=1"])


def test_address_local_auto_or_host_port() -> None:
    assert farm.parse_address("local") is None
    assert farm.parse_address("auto") == "auto"
    assert farm.parse_address("10.0.0.5:6379") == "10.0.0.5:6379"
    assert farm.parse_address("head.studio.lan:6379") == "head.studio.lan:6379"
    for bad in ("", "10.0.0.5", "ray://x", "local host:1"):
        with pytest.raises(UserError, match="local, auto or HOST:PORT"):
            farm.parse_address(bad)


@pytest.mark.parametrize("total, size", [(300, 30), (301, 30), (29, 30), (1, 30), (90, 1)])
def test_plan_covers_every_frame_once_and_the_last_segment_runs_to_the_end(total: int, size: int) -> None:
    segs = farm.plan(total, size)
    assert segs[-1][1] is None and all(n == size for _, n in segs[:-1])
    starts = [s for s, _ in segs]
    assert starts == list(range(0, total, size))
    assert total - starts[-1] <= size


def test_a_farm_record_keeps_out_of_order_segments_and_drops_mismatches(tmp_path: Path) -> None:
    """The keep rules of a run with a fixed segment length (:mod:`pipeline.jobs.resume`)."""
    clip = make_clip(tmp_path / "c.mp4", seconds=0.5, audio=False)
    work = tmp_path / "work"
    work.mkdir()
    done = [segments.Segment(segments.segment_name(s), s, 10, "n1", "id1", 7, 1.5) for s in (0, 20, 40)]
    for s in done:  # 10 is missing
        (work / s.file).write_bytes(b"x")
    run = ResumeRecord.for_run(work, clip, FAST, segment_frames=10)
    saved = run.with_segments([*done, segments.Segment("seg-00000035.mkv", 35, 10)],  # not on the plan
                              models=("inswapper_128",), notices=("n",)).to_json()
    assert saved["segments"][1] == {"file": "seg-00000020.mkv", "start": 20, "frames": 10, "node": "n1",
                                    "node_id": "id1", "pid": 7, "seconds": 1.5}  # the format queue show reads
    kept = run.kept(saved)
    assert [s.start for s in kept.segments] == [0, 20, 40] and kept.segments[1] == done[1]
    assert (kept.models, kept.notices) == (("inswapper_128",), ("n",))
    assert not ResumeRecord.for_run(work, clip, FAST, segment_frames=12).kept(saved).segments  # other length
    other = apply_overrides(FAST, ["output.quality=50"])
    assert not ResumeRecord.for_run(work, clip, other, segment_frames=10).kept(saved).segments  # settings
    (work / done[1].file).unlink()
    assert [s.start for s in run.kept(saved).segments] == [0, 40]
    # a local (time-paced) run of the same job keeps the gap-free part from frame 0, whatever the length
    assert [s.start for s in ResumeRecord.for_run(work, clip, FAST).kept(saved).segments] == [0]


def test_farm_segment_length_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    assert farm.default_segment_seconds() == farm.DEFAULT_SEGMENT_SECONDS
    monkeypatch.setenv(farm.SEGMENT_VAR, "1.5")
    assert farm.default_segment_seconds() == 1.5
    monkeypatch.setenv(farm.SEGMENT_VAR, "soon")
    with pytest.raises(UserError, match="FACESTATION_FARM_SEGMENT_SECONDS"):
        farm.default_segment_seconds()


def test_ray_missing_exits_2_with_the_install_command(monkeypatch: pytest.MonkeyPatch,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` raises ImportError
    assert main(["queue", "run", "--ray", "local", "--once"]) == 2
    err = capsys.readouterr().err
    assert 'pip install "facestation[farm]"' in err and err.count("\n") == 1, err
    assert main(["queue", "run", "--once", "--slots", "2"]) == 2  # --slots only with --ray
    assert "--slots goes with --ray" in capsys.readouterr().err
    assert main(["queue", "run", "--once"]) == 0  # without --ray, everything as before
    assert "0 job(s) done" in capsys.readouterr().out


def test_queue_show_lists_segments_with_node_pid_and_time(tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    store = open_store()
    job = store.add([photos.grace_hopper_path()], photos.astronaut_path(tmp_path), tmp_path / "o.mp4", FAST)
    rows = [SegmentDone(segments.segment_name(s), s, 30, "box", f"n{s}", 100 + s, 1.5).segment().row()
            for s in (30, 0)]
    lease = store.claim_next("box/ray")
    assert lease is not None
    lease.save_resume({"segments": rows})
    assert main(["queue", "show", str(job.id), "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["id"] == job.id and shown["state"] == "running"
    assert [(s["start"], s["node"], s["pid"], s["seconds"]) for s in shown["segments"]] == [
        (0, "box", 100, 1.5), (30, "box", 130, 1.5)]
    assert main(["queue", "show", str(job.id)]) == 0
    assert "box (n30) / 130" in capsys.readouterr().out
    assert main(["queue", "show", "999"]) == 2


def test_file_server_serves_only_the_files_it_was_given(tmp_path: Path) -> None:
    allowed, secret = tmp_path / "clip.bin", tmp_path / "secret"
    allowed.write_bytes(bytes(range(256)))
    secret.write_bytes(b"no")
    server = FileServer()
    server.allow([str(allowed)])
    assert server.read(str(allowed), 250, 100) == bytes(range(250, 256))
    with pytest.raises(PermissionError):
        server.read(str(secret), 0, 10)


def test_a_cpu_task_uses_the_cores_ray_gave_it_unless_the_job_says() -> None:
    assert task_settings(FAST.model_dump_json(), 1.0).execution.threads == 1
    assert task_settings(FAST.model_dump_json(), None).execution.threads == 0  # a GPU task
    pinned = apply_overrides(FAST, ["execution.threads=3"])
    assert task_settings(pinned.model_dump_json(), 1.0).execution.threads == 3


def test_farm_status_is_shown_while_fresh_and_the_queue_shows_segments_at_once(tmp_path: Path) -> None:
    from pipeline import api
    from pipeline.progress import Progress
    from webui.queue_tab import render_jobs
    from webui.system_tab import farm_lines

    assert api.farm_status() is None
    assert "not running" in "\n".join(farm_lines(None))
    node = {"node": "gpu-box", "node_id": "abc123", "address": "10.0.0.2", "cpus": 16, "gpus": 2,
            "gpu_free_mb": 70000.0}
    status = {"updated_at": time.time(), "address": "auto", "slots": 2, "nodes": [node], "running": {"4": 2}}
    farm.status_path().write_text(json.dumps(status), encoding="utf-8")
    assert api.farm_status() == status
    text = "\n".join(farm_lines(api.farm_status()))
    assert "1 node(s), 2 slot(s), 2 segment(s) rendering" in text and "2 GPU, 70000 MB free" in text
    farm.status_path().write_text(json.dumps({**status, "updated_at": time.time() - 60}), encoding="utf-8")
    assert api.farm_status() is None  # a driver that stopped writing is not shown as running
    store = open_store()
    job = store.add([photos.grace_hopper_path()], photos.astronaut_path(tmp_path), tmp_path / "o.mp4", FAST)
    lease = store.claim_next("box/ray")
    assert lease is not None
    lease.progress(Progress(30, 300, stage={"running": 2}))
    assert "2 at once" in render_jobs([store.get(job.id)])


@pytest.mark.parametrize("fps, audio", [(30, True), (25, False)])
def test_a_segment_seeks_to_its_own_start_and_decodes_exactly_the_same_frames(
        tmp_path: Path, fps: int, audio: bool) -> None:
    import numpy as np

    from pipeline.jobs.farm_task import seek_range
    from pipeline.video.decode import read_frames
    from pipeline.video.probe import probe
    from pipeline.video.trim import Trim

    clip = make_clip(tmp_path / "c.mp4", seconds=4, fps=fps, audio=audio)
    info = probe(clip)
    full = list(read_frames(clip))
    for start, n in ((1, 5), (fps - 1, 3), (fps, fps), (fps + 1, 4), (3 * fps, None), (len(full) - 2, None)):
        seeked, frames = seek_range(FAST, info, start, n)
        assert seeked.video.start is not None and frames == (0, n)
        got = list(read_frames(clip, info=info, trim=Trim.of(seeked), frames=frames))
        want = full[start:] if n is None else full[start:start + n]
        assert len(got) == len(want), (start, n)
        assert all(np.array_equal(a, b) for a, b in zip(got, want, strict=True)), f"segment at {start}"
    assert seek_range(FAST, info, 0, 5) == (FAST, (0, 5))  # the first segment needs no seek
    trimmed = apply_overrides(FAST, ["video.start=1.0"])
    assert seek_range(trimmed, info, 30, 5) == (trimmed, (30, 35))  # a trimmed job keeps the index


def _install_fake(*names: str) -> None:
    from pipeline.models import catalog, store

    for name in names:
        path = store.installed_path(catalog.get(name))
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"weights of " + name.encode())


def test_the_driver_resolves_the_swapper_and_ships_exactly_the_models_it_needs() -> None:
    """``auto`` is resolved once on the driver, the tasks get that name, and the models of those settings go
    to the nodes (the swapper and its recogniser included; a model the settings do not use stays)."""
    from pipeline.processors.face_swapper.auto import CLASSIC_NOTICE

    settings = apply_overrides(FAST, ["landmarks.model=2dfan4"])
    assert settings.face_swapper.model == "auto"
    resolved, notices = farm.resolved_settings(settings)  # nothing installed: the classic swapper
    assert resolved.face_swapper.model == "classic" and notices == [CLASSIC_NOTICE]
    assert farm._shippable_models(resolved) == {}
    _install_fake("inswapper_128", "arcface_w600k_r50", "hyperswap_1b_256", "2dfan4")
    resolved, notices = farm.resolved_settings(settings)
    assert resolved.face_swapper.model == "inswapper_128" and notices == []
    assert json.loads(resolved.model_dump_json())["face_swapper"]["model"] == "inswapper_128"
    shipped = farm._shippable_models(resolved)
    assert sorted(shipped) == ["2dfan4", "arcface_w600k_r50", "inswapper_128"]
    assert shipped["inswapper_128"]["size"] == len(b"weights of inswapper_128")
    named = apply_overrides(FAST, ["face_swapper.model=hyperswap_1b_256"])
    assert farm.resolved_settings(named) == (named, [])  # a name the user chose is kept as it is


class _Control:
    """A RunControl stand-in: due only when the test says so; counts the reports."""

    def __init__(self) -> None:
        self.is_due, self.reports, self.cancelled, self.cancel = False, [], False, None

    def due(self) -> bool:
        return self.is_due

    def report(self, progress: object) -> None:
        self.reports.append(progress)


def test_a_farm_job_reports_the_notices_of_its_segments_once_each(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """Each segment's notices come back with it; the driver keeps them (deduplicated, and in the resume record
    for a driver that resumes) and returns them in the job's summary. Progress is written only when due."""
    from pipeline.jobs import runner
    from pipeline.processors.face_swapper.auto import CLASSIC_NOTICE

    store = open_store()
    clip = make_clip(tmp_path / "clip.mp4", seconds=2.0, size=(64, 48), fps=10)
    job = store.add([photos.grace_hopper_path()], clip, tmp_path / "o.mp4", FAST)
    lease = store.claim_next("box/ray")
    assert lease is not None
    job = lease.job
    saved: list[dict] = []
    control = _Control()
    ctx = runner.JobContext(control=control,  # type: ignore[arg-type]
                            save_resume=saved.append, log=lambda text: None)
    the_farm = farm.Farm(None, 1, {}, segment_seconds=1.0)
    the_farm._status_at = time.time() + 3600  # no status file (it asks Ray for the nodes)
    first = farm.FarmVideoJob(the_farm, job, ctx)
    assert first.plan == [(0, 10), (10, None)] and first.notices == [CLASSIC_NOTICE]
    odd, damaged = "clip.mp4 is 63×47: ...", "2 frames of clip.mp4 could not be read"
    first.work.mkdir(parents=True, exist_ok=True)
    for start, notices in ((0, (odd,)), (10, (odd, damaged))):
        (first.work / segments.segment_name(start)).write_bytes(b"segment")
        first._finished((start, 10 if start == 0 else None),
                        SegmentDone(segments.segment_name(start), start, 10, "box", "n1", 7, 1.0,
                                    notices=notices))
        first._progress(0)
    assert control.reports == []  # not due: nothing written
    control.is_due = True
    first._progress(0)
    assert len(control.reports) == 1
    assert saved[-1]["notices"] == [CLASSIC_NOTICE, odd, damaged]
    assert "notices" not in saved[-1]["segments"][0]
    lease.save_resume(saved[-1])
    monkeypatch.setattr(segments, "join_segments", lambda *args, **kwargs: None)
    resumed = farm.FarmVideoJob(the_farm, store.get(job.id), ctx)  # a driver that died and came back
    assert [s.start for s in resumed.record.segments] == [0, 10]
    assert resumed.run()["notices"] == [CLASSIC_NOTICE, odd, damaged]


def test_a_farm_job_joins_its_segments_quality_reports_beside_its_output(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each segment's quality report comes back with it (its frames numbered in the output); the driver
    joins them, in frame order whatever order they finished in, into the one ``NAME.quality.json`` beside
    the output that a local job writes, and says it in the job's summary."""
    from pipeline.jobs import runner
    from pipeline.quality import read_report
    from pipeline.quality.report import FrameRecord, QualityReport, TrackRecord

    store = open_store()
    clip = make_clip(tmp_path / "clip.mp4", seconds=2.0, size=(64, 48), fps=10)
    store.add([photos.grace_hopper_path()], clip, tmp_path / "o.mp4", FAST)
    lease = store.claim_next("box/ray")
    assert lease is not None
    ctx = runner.JobContext(control=_Control(),  # type: ignore[arg-type]
                            save_resume=lambda data: None, log=lambda text: None)
    the_farm = farm.Farm(None, 1, {}, segment_seconds=1.0)
    the_farm._status_at = time.time() + 3600  # no status file (it asks Ray for the nodes)
    driver = farm.FarmVideoJob(the_farm, lease.job, ctx)
    driver.work.mkdir(parents=True, exist_ok=True)
    limits = {"identity_min": 0.3, "jitter_max": 0.1, "identity_every": 1}

    def report(start: int, missed: range) -> QualityReport:
        frames = [FrameRecord(i, found=1, swapped=int(i not in missed), missed=int(i in missed),
                              identity=[] if i in missed else [0.6], before=[] if i in missed else [0.2],
                              flags=["missed"] if i in missed else []) for i in range(start, start + 10)]
        return QualityReport("segment", 10.0, True, limits, frames, [TrackRecord(0, start, start + 9, 10)])

    for start, missed in ((10, range(8, 14)), (0, range(8, 14))):  # the second segment finishes first
        (driver.work / segments.segment_name(start)).write_bytes(b"segment")
        driver._finished((start, 10 if start == 0 else None),
                         SegmentDone(segments.segment_name(start), start, 10, "box", "n1", 7, 1.0,
                                     quality=report(start, missed)))
    monkeypatch.setattr(segments, "join_segments", lambda *args, **kwargs: None)
    summary = driver.run()
    written = read_report(tmp_path / "o.mp4")
    assert summary["quality"]["path"] == str(tmp_path / "o.quality.json")
    assert [f["frame"] for f in written["frames"]] == list(range(20))
    assert written["stretches"] == [{"start": 8, "end": 13, "kinds": ["missed"]}]  # across the segments' edge
    assert [t["track"] for t in written["tracks"]] == [0, 1] and written["output"] == "o.mp4"
    assert written["summary"]["frames_swapped"] == 14 and summary["quality"]["frames"] == 20
