"""Video I/O: probe, decode and encode through ffmpeg pipes (command builders are pure, in builders.py).

    info = probe(path)                                  # or BadMedia with one clear line
    with encoder_for(out, info, settings, models=[...], cancel=event) as enc:
        for frame in read_frames(path, info=info, trim=Trim(start, end), cancel=event):
            enc.write(process(frame))                   # BGR uint8 HxWx3
"""

from pipeline.video.decode import read_frames
from pipeline.video.encode import EncodeError, Encoder, encoder_for
from pipeline.video.encoders import choose_encoder, choose_hwaccel
from pipeline.video.probe import VideoInfo, probe

__all__ = ["EncodeError", "Encoder", "VideoInfo", "choose_encoder", "choose_hwaccel", "encoder_for", "probe",
           "read_frames"]
