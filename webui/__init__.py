"""Gradio web UI: builds components and wires callbacks into pipeline/; never computes."""
