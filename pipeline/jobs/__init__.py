"""The render queue: job store (SQLite), worker, resumable segmented video jobs, `facestation queue`."""
