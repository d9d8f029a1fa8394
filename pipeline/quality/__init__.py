"""The quality report written with every render: faces found and swapped frame by frame, why a face was left
alone, how much each swapped face looks like the source (judged by SFace), how much the faces shake, and the
stretches to look at. Computed in the render's own threads from what the chain already holds (record.py,
identity.py), stored beside the output as ``NAME.quality.json`` (report.py), drawn by plot.py."""

from pipeline.quality.record import Recorder
from pipeline.quality.report import QualityReport, read_report, sidecar_of, write_report

__all__ = ["QualityReport", "Recorder", "read_report", "sidecar_of", "write_report"]
