"""The engine's public face for the web UI: everything ``webui/`` may use, and nothing more.

``webui/`` imports ``pipeline.api`` and no other ``pipeline`` module, so the engine's rooms can be
rearranged without touching the UI: only the import lines here move. This module re-exports and adds
a few small functions; it computes nothing of its own. ``__all__`` below lists the API by concern.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pipeline import paths
from pipeline.adopt import adopt as adopt_models
from pipeline.alpha import transparent
from pipeline.bench import BackgroundBench
from pipeline.checks import ModelsMissing, choice_label
from pipeline.env import check as check_environment
from pipeline.errors import FetchFailed, ModelMissing, UserError, memory_fault
from pipeline.jobs.batch import DEFAULT_NAME as BATCH_NAME
from pipeline.jobs.batch import FIELDS as BATCH_FIELDS
from pipeline.jobs.batch import BatchItem, add_batch, check_pattern
from pipeline.jobs.farm import read_status as farm_status
from pipeline.jobs.model import Job
from pipeline.jobs.registry import WorkerInfo
from pipeline.jobs.rerender import submit as rerender_job
from pipeline.jobs.service import add as add_job
from pipeline.jobs.service import cancel as cancel_job
from pipeline.jobs.service import delete as delete_job
from pipeline.jobs.service import latest_frame, open_store
from pipeline.jobs.service import move as move_job
from pipeline.jobs.service import retry as retry_job
from pipeline.jobs.store import DB_NAME as QUEUE_FILE
from pipeline.jobs.store import JobStore
from pipeline.jobs.worker import start_in_thread as start_worker
from pipeline.live.browser_run import BadOffer
from pipeline.live.webrtc import LiveRuns, rtc_missing
from pipeline.machine import encoder_failures, usable_encoders, usable_providers
from pipeline.markers import add_here as add_marker_here
from pipeline.markers import for_job as settings_with_markers
from pipeline.markers import listed as marker_lines
from pipeline.markers import without as without_marker
from pipeline.media import IMAGE_INPUTS as IMAGE_SUFFIXES
from pipeline.media import VIDEO_INPUTS as VIDEO_SUFFIXES
from pipeline.media import check_media
from pipeline.modelcheck import ModelCheck
from pipeline.modelcheck import check as check_models
from pipeline.models.catalog import CATALOG
from pipeline.models.gpu import gpu_problem
from pipeline.models.sessions import available_providers
from pipeline.models.sessions import loaded as loaded_sessions
from pipeline.models.sessions import release as release_sessions
from pipeline.models.store import fetch as fetch_model
from pipeline.models.store import fetch_order as model_fetch_order
from pipeline.models.store import import_file as import_model
from pipeline.models.store import status as model_status
from pipeline.paths import data_dir, outputs_dir
from pipeline.presets import PresetExists, list_presets
from pipeline.presets import delete as delete_preset
from pipeline.presets import export as export_preset
from pipeline.presets import import_file as import_preset
from pipeline.presets import load as load_preset
from pipeline.presets import save as save_preset
from pipeline.preview import faces_in, preview, read_frame, save_reference, smaller
from pipeline.processors import PROCESSORS
from pipeline.quality import read_report as read_quality_report
from pipeline.render import STAGES
from pipeline.request import Checked, SwapRequest
from pipeline.request import check as check_request
from pipeline.settings import Settings, apply_overrides
from pipeline.settings import keys as settings_keys
from pipeline.strip import FrameStrip, first_frame, frame_strip
from pipeline.thumbnails import (
    SourceThumb,
    face_image,
    is_job_thumbnail,
    job_thumbnail,
    pair_image,
    source_thumbnails,
)
from pipeline.types import Encoder
from pipeline.video.ffmpeg import encoders as ffmpeg_encoders
from pipeline.video.ffmpeg import find_tools as find_ffmpeg
from pipeline.video.formats import suffix_for as video_suffix
from pipeline.video.trim import Trim
from pipeline.workspace import (
    OutputFolder,
    fresh_output,
    output_folder,
    output_path,
    remove_download_copies,
    shown_name,
    stash,
)

__all__ = [
    # settings: the validated model; settings_keys() gives every "section.key" with its pydantic field
    "Settings", "apply_overrides", "settings_keys",
    # markers (the Swap tab's timeline): a marker made from the settings as they are now, listed, removed;
    # the settings a job with them is queued with (pipeline/markers.py)
    "add_marker_here", "marker_lines", "without_marker", "settings_with_markers",
    # processors: what the UI shows of each (its settings section, title, whether it follows a sound)
    "ProcessorInfo", "processors",
    # environment: every FACESTATION_* variable read once, UserError naming the first bad one (start-up)
    "check_environment",
    # errors: the one exception type whose message is shown to the user as it is
    "UserError", "ModelMissing", "FetchFailed", "memory_fault",
    # media: what an upload may be, and the check of one by content
    "IMAGE_SUFFIXES", "VIDEO_SUFFIXES", "check_media",
    # a swap request and its one check, run before a preview, a queued job, a batch's and live; model labels
    "SwapRequest", "check_request", "Checked", "ModelsMissing", "choice_label",
    # the trim (video.start / video.end) as frames: kept, refused in one line, in words
    "Trim",
    # preview: one frame, its faces, a reference face picked from them, the frame processed
    # (a fast one: at most max_side px; smaller() makes the original the same size for the compare)
    "read_frame", "faces_in", "save_reference", "references_dir", "preview", "smaller",
    # timeline: a video's frame strip (thumbnails across it, to trim on), the target's first frame (JPEG)
    "FrameStrip", "frame_strip", "first_frame",
    # workspace: the data and outputs folders, the upload stash, fresh output paths, old copies removed
    "data_dir", "outputs_dir", "stash", "shown_name", "output_path", "remove_download_copies",
    # output folders: the one a user chose (local: any; shared: inside their own), a fresh file name in it
    "OutputFolder", "output_folder", "fresh_output",
    # transparency: whether the settings make a transparent output (its file then keeps alpha); a video
    # output's extension as the settings choose it (video/formats.py)
    "transparent", "video_suffix",
    # jobs (pipeline.jobs.service): the queue opened as the CLI opens it, add (checked), delete, a worker
    "Job", "JobStore", "QUEUE_FILE", "open_store", "add_job", "cancel_job", "retry_job", "rerender_job",
    "move_job", "delete_job", "start_worker",
    # batch (pipeline.jobs.batch): one job per target, outputs named by a pattern of BATCH_FIELDS
    "BatchItem", "add_batch", "check_pattern", "BATCH_NAME", "BATCH_FIELDS",
    # the render workers serving the queue (JobStore.workers.live()): id, host, pid, the job each renders
    "WorkerInfo",
    "latest_frame",
    # a render's quality report (pipeline/quality/report.py), as written beside its output; UserError if none
    "read_quality_report",
    # presets (PresetExists: saving without overwrite under a name the shelf has, in any case)
    "PresetExists", "list_presets", "load_preset", "save_preset", "delete_preset", "import_preset",
    "export_preset",
    # models: installed or missing, download (with progress; a model's needs first), import a local file,
    # adopt a folder of models already on this machine
    "model_status", "fetch_model", "model_fetch_order", "import_model", "adopt_models",
    # model check: each installed model run on real photos, judged by independent means (seconds: no job)
    "check_models", "ModelCheck",
    # whether a choice names a catalog model (its dropdown says whether it is installed)
    "is_model",
    # system: inference providers and loaded sessions, ffmpeg and its encoders
    "usable_providers", "usable_encoders", "encoder_failures", "gpu_problem",
    "available_providers", "loaded_sessions", "release_sessions", "find_ffmpeg", "ffmpeg_encoders", "Encoder",
    # render farm: what a `facestation queue run --ray` driver last wrote (nodes, GPUs, segments running)
    "farm_status",
    # live mode in the browser: the runs by owner, the offer's refusal, whether aiortc is installed
    "LiveRuns", "BadOffer", "rtc_missing",
    # benchmark: the render stages it times, a run on its own thread
    "STAGES", "BackgroundBench",
    # thumbnails: source photos with their faces boxed, a chosen face, source -> face pairs, a job's frame
    # for its Queue row (a cached JPEG; is_job_thumbnail tells a link's file is one)
    "SourceThumb", "source_thumbnails", "face_image", "pair_image", "job_thumbnail", "is_job_thumbnail",
]


def references_dir() -> Path:
    """The folder :func:`save_reference` writes to: a reference face in settings must come from there."""
    return paths.data_dir() / "references"



@dataclass(frozen=True)
class ProcessorInfo:
    """What the UI shows of a processor: its name in ``processors.order``, its settings section and title,
    whether it follows a sound (a new voice is offered beside it) and whether the default order runs it."""

    name: str
    section: str
    title: str
    needs_sound: bool
    default: bool


def processors() -> list[ProcessorInfo]:
    """Every processor, in the order the UI shows them (the registry's)."""
    default = Settings().processors.order
    return [ProcessorInfo(p.name, p.section, p.title, p.needs_sound, p.name in default)
            for p in PROCESSORS.values()]


def is_model(name: str) -> bool:
    """Whether a settings choice ``name`` is a catalog model (which may be installed or not)."""
    return name in CATALOG
