"""Surrogate ONNX models with the exact I/O of the catalog, generated at test time.

No real swapper, detector or enhancer weights can be downloaded where the tests run, so each
non-builtin catalog entry gets a tiny graph built with ``onnx.helper``. Its inputs and outputs are
built from the entry's declarations (names, ranks, fixed dims, dtypes: nothing restated here; a tensor
the catalog leaves unnamed gets a name of ours, and is bound by position), and its value ranges follow
the entry's conventions (input and output normalisation, raw or normalised source embedding, logits or
probabilities). ``signature=(inputs, outputs)`` builds it with another signature instead: a test of
a real file's facts gives them from docs/models.md, so that it checks the catalog instead of echoing
it. Behaviour is simple but useful:

- swappers: in [0, 1] pixels, ``out = target·(1−a) + a·colour(tanh(source @ W))`` per channel, where
  ``a = alpha·min(1, |source| / full_norm)`` (full_norm: the source norm the real file expects, ≈20 for
  GHOST's raw embedding, else 1), so changing the source changes the output and a too-weak source
  barely does; ``bank=[(key, crop)…]`` instead pastes the face crop (3×S×S RGB in [0, 1], aligned as the
  model's crops are) whose key is nearest the source vector, at the target's mean colour: a surrogate that
  really carries an identity (:func:`install_face_swapper`: one face, whatever the source: a swap whose
  shape colour matching keeps); ``constant=(r, g, b)``: that colour in [0, 1] everywhere (a known effect);
  inswapper also carries a 512×512 ``emap`` as its last initializer;
  ``identity=True`` returns the target; batch fixed to 1 as exported (``batch=None`` for a dynamic axis;
  ``hardcode_batch=True`` adds a Reshape to a literal batch of 1);
- detectors (SCRFD family, YOLO face): emit exactly the ``faces`` given (input-pixel coordinates);
  ``channel_gate=True``: only where channel 0 of the input is on average above channel 2 (skin, fed
  RGB as the real files were trained), like a model that finds no face in a blue-cast image;
- recognisers: a fixed random projection of an 8×8 pooled, mean-centred image, of norm ``norm`` (≈20,
  as ArcFace's raw outputs); ``constant=True``: the same vector whatever the face;
- enhancers: an unsharp mask in [−1, 1] (codeformer scales it by its double ``w``); ``decoys``: other
  outputs of the image's shape listed before it (as RestoreFormer++ has); wrong files for ``models check``:
  ``swap_channels=True`` (returns BGR), ``nhwc=True`` (reads its NCHW input as if NHWC), ``constant=v``;
- frame enhancers: the tile resized ``scale`` × (nearest or linear), ``pattern``: plus a fixed pattern over
  the output tile's own pixels (a misplaced tile shows), ``blur``: a zero-padded 3×3 mean first (a kept
  overlap shows as a seam); ``shift``: plus that level everywhere; ``swap_channels=True`` for
  ``models check``;
- LivePortrait (one builder per part, by the entry's name): the feature extractor carries the 4×-pooled RGB
  image in channels 0-2 of its volume; the motion extractor returns the fixed motion given (``motions``: one,
  or two: the first for a dark input, mean < 0.5, the second for a bright one; angles as rank-0 scalars with
  ``scalar_angles=True``; ``follow=k``: its expression plus k × the image's mean absolute deviation, so a
  crop of other texture gets another expression); the generator returns that image upsampled to 512, plus
  ``GENERATOR_GAIN·mean(source − target)`` (so its output moves with the keypoints it is given;
  ``invert=True``: the negative image; ``constant=(r, g, b)``: that colour instead of the image); the
  retargeters are ``input @ retargeter_weights(width)``; the stitcher is
  ``source + STITCH_PULL·(target − source) + stitch_offset()``;
- occluders: a fixed mask (``mask``; ``invert=True``: 1 − mask), or ``skin=True``: face where red is above
  blue (R − B), as logits or probabilities per the entry; parser / 2dfan4: fixed class maps and landmarks;
- colourisers: colour as an affine function of the grey input (DDColor's Lab a/b, DeOldify's RGB);
  ``invert=True`` gives the opposite hue, ``constant=v`` a constant;
- lip syncers: the face input back (wav2lip: its full copy, channels 3..5, BGR in [0, 1]; edtalk: its RGB
  face), the lower half (rows ≥ ½) moved by ``gain``·tanh(⟨audio, W_c⟩) per channel (W fixed, seeded),
  edtalk's times its ``weight``; so the mouth follows the audio values and the upper face does not
  (``constant=c``: every pixel the colour c, in the model's channel order: a known effect); voice
  extractors: their spectrogram input × ``scale`` (1: the voice is the whole sound);
- deep swapper (DFM, NHWC BGR [0, 1]): ``celeb = DFM_KEEP·in_face + (1 − DFM_KEEP)·morph`` for an AMP file
  (``amp=True``, the default: it has ``morph_value:0``), ``celeb = in_face`` without it; ``face_mask`` and
  ``celeb_mask`` are fixed arrays (``face_mask=``, ``celeb_mask=``: S×S; default ellipses); ``size``: the
  resolution of a file whose catalog entry leaves it open (custom files); ``nchw=True``: a wrong layout;
  ``constant=(b, g, r)``: the celeb that colour (a known effect);
  ``open_size=True``: H and W left dynamic (the input itself back, its mean as both masks);
- age modifiers: fran brightens its crop by the age change it is fed, styleganex_age its extend by its
  direction; ``encode=True`` writes the direction into the output (fran: a constant colour, styleganex_age: a
  checkerboard's amplitude); fairface returns the ids it is given (``age=``).

Nothing here is committed as a binary: tests call ``make_surrogate``/``install_surrogate``.

One module per role: ``swappers`` (and the DFM deep swapper), ``detectors``, ``faces`` (recognisers,
enhancers, occluders, parsers, landmarkers), ``frames`` (colourisers, frame enhancers, background removers),
``liveportrait``, ``sound`` (lip syncers, voice extractors), ``age``; ``graph`` is the kit they draw with,
``writer`` writes the file. Tests import from here.
"""

from tests.surrogates.age import FRAN_BLUE, STYLEGANEX_ENCODE
from tests.surrogates.detectors import scrfd_arrays
from tests.surrogates.faces import default_classes, default_landmarks68
from tests.surrogates.frames import DDCOLOR_AB, DEOLDIFY_RGB
from tests.surrogates.graph import RAW_NORM
from tests.surrogates.liveportrait import (
                                     GENERATOR_GAIN,
                                     STITCH_PULL,
                                     default_motion,
                                     retargeter_weights,
                                     stitch_offset,
)
from tests.surrogates.sound import audio_shift
from tests.surrogates.swappers import DFM_KEEP, dfm_masks
from tests.surrogates.writer import (
                                     SURROGATE_NAMES,
                                     install_dfm,
                                     install_face_swapper,
                                     install_live_portrait,
                                     install_surrogate,
                                     make_surrogate,
)

__all__ = ["DDCOLOR_AB", "DEOLDIFY_RGB", "DFM_KEEP", "FRAN_BLUE", "GENERATOR_GAIN", "RAW_NORM", "STITCH_PULL",
           "STYLEGANEX_ENCODE", "SURROGATE_NAMES", "audio_shift", "default_classes", "default_landmarks68",
           "default_motion", "dfm_masks", "install_dfm", "install_face_swapper", "install_live_portrait",
           "install_surrogate", "make_surrogate", "retargeter_weights", "scrfd_arrays", "stitch_offset"]
