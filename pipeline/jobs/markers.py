"""A video job with markers (``Settings.markers``): its stretches rendered one after the other, each into
its own segments (:func:`pipeline.markers.render`), so that no segment spans a marker and a resumed job
starts again at the end of its recorded segments, in whichever stretch that is."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from pipeline.jobs import segments
from pipeline.jobs.runner import VideoJob

if TYPE_CHECKING:
    from pipeline.progress import Progress, RunControl

log = logging.getLogger(__name__)


class MarkedVideoJob(VideoJob):
    """A :class:`~pipeline.jobs.runner.VideoJob` whose settings change at markers."""

    def render_rest(self) -> dict[str, Any]:
        from pipeline import markers
        from pipeline.render import no_face_notice

        details: dict[str, Any] = {}
        if self.record.complete:
            return details
        parts = markers.stretches(self.settings, self.info.frame_count, self.info.fps, self.target.name)
        results = markers.render(parts, list(self.job.sources), self.target, info=self.info,
                                 sink_for=self._writer_at, control_for=self._control_at, audio=self.voice,
                                 start=self.resumed_at)
        if results:
            joined = markers.joined_result(results, self.output)
            self.rendered, self.quality = joined.frames, joined.quality
            self.models = list(dict.fromkeys([*self.models, *joined.models]))
            details = {"encoder": joined.encoder, "batch_size": joined.batch_size, "stage_s": joined.stage_s,
                       "faces_swapped": joined.faces_swapped, "faces_left_alone": joined.faces_left_alone,
                       "peak_rss_mb": max(r.peak_rss_mb for r in results),
                       "markers": [[p.start, p.marker.label if p.marker else None] for p in parts]}
            notices = list(joined.notices)
            if joined.faces_swapped == 0 and self.resumed_at == 0:
                notices += filter(None, [no_face_notice(self.target, self.settings)])
            self.notice(notices)
        self.mark_complete()
        return details

    def _writer_at(self, first: int) -> Callable[[int, int], segments.SegmentWriter]:
        def writer(width: int, height: int) -> segments.SegmentWriter:
            return segments.SegmentWriter(self.work, first_frame=first, pace=self.ctx.pace, source=self.info,
                                          settings=self.settings, size=(width, height),
                                          on_segment=self.add_segment, cancel=self.ctx.control.cancel,
                                          container=self.output.suffix)
        return writer

    def _control_at(self, first: int) -> RunControl:
        def whole(p: Progress) -> Progress:
            return replace(p, frames_done=first + p.frames_done, frames_total=self.total,
                           stage={**p.stage, "segments": len(self.record.segments)})
        return self.ctx.control.relay(whole)
