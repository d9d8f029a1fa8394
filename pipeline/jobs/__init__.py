"""The render queue: job store (SQLite), worker, resumable segmented video jobs, and the operations the
command line and the web UI share (:mod:`pipeline.jobs.service`)."""
