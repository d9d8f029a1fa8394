"""Live mode: a camera's frames through the chain as they come, with bounded latency.

handoff.py (the single-slot "newest frame wins" handoff between capture and processing) · camera.py (where
frames come from: a v4l2 device through ffmpeg, or a file delivered at its own rate) · engine.py
(LiveEngine: the capture thread, the processing loop, ``update`` between frames, LiveStats) · outputs.py
(where frames go: a recording, MPEG-TS over UDP, a v4l2loopback device, a window) · step.py (the chain for
one frame at a time)."""
