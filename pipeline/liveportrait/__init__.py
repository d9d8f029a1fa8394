"""LivePortrait (KwaiVGI, FaceFusion's six ONNX exports): the expression restorer's and face editor's models.

- ``kinematics.py``  the keypoint maths (docs/processors.md §3.2): rotation from degrees, x = s·(x_c·Rᵀ + δ)
  + t, the expression limits, the head-angle limits, the restorer's areas, the editor's sliders
- ``network.py``     the six files as sessions (feature extractor, motion extractor, generator, eye and lip
                     retargeters, stitcher), fed and read by the catalog's names, batched where a file allows
"""
