"""What a ``models check`` judge works with, below the processors whose judges use it and the check that runs
them (pipeline/modelcheck/): judging.py (Context, Finding, the thresholds) · measures.py (IoU, SSIM,
sharpness, colour, coverage) · photos.py (the real photos and their faces)."""
