"""The lip syncer's ``models check`` judges: the lip syncers (the photo's lower face re-drawn, moving with a
voice) and the voice extractors (a voice alone comes back)."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from pipeline.checking import measures
from pipeline.checking.judging import MAX_COLOUR_SHIFT, Context, Finding, Judge, aligned, build, decide
from pipeline.faces import align
from pipeline.processors.lip_syncer import geometry, mel
from pipeline.processors.lip_syncer.base import CROP, TEMPLATE, Mouth
from pipeline.processors.lip_syncer.processor import FAMILIES

MIN_LOWER_SSIM = 0.4  # lip syncer: the re-drawn lower face vs the photo's, at 128 px
MIN_MOUTH_MOTION = 1.0  # lip syncer: mean change of the lower face between silence and a voice (levels)
MIN_VOICE_CORRELATION = 0.5  # voice extractor: a voice alone comes back (correlation with the input)
VOICE_LOUDNESS = (0.3, 1.5)  # voice extractor: its RMS relative to the input's


def check_voice(seconds: float = 1.0) -> npt.NDArray[np.int16]:
    """48 kHz stereo: a vowel-like voice (a 140 Hz tone's harmonics, opening and closing 4 times a second)."""
    t = np.arange(int(seconds * 48_000)) / 48_000
    wave = sum(np.sin(2 * np.pi * 140 * k * t) / k for k in range(1, 24))
    wave = wave * (0.5 + 0.5 * np.sin(2 * np.pi * 4 * t)) / 3.0
    return (np.stack([wave, wave], axis=1) * 12_000).astype(np.int16)


def judge_lip_syncer(name: str, ctx: Context) -> Finding:
    model = build(name, ctx, FAMILIES)
    crop, matrix = aligned(ctx.photos.person, TEMPLATE, CROP)
    shape = geometry.from_5(align.transform_points(ctx.photos.person.face.landmarks, matrix))
    loud = mel.Windows(mel.spectrogram(check_voice()), 25.0).window(10)
    quiet, voiced = (model.sync([Mouth(crop, shape, w)], 0.5)[0] for w in (mel.empty(), loud))
    x1, y1, x2, y2 = (int(np.clip(v, 0, CROP)) for v in shape.box)
    mouth = (slice(y1 + (y2 - y1) * 11 // 20, y2), slice(x1, x2))  # the lower face: below the nose
    drawn, original = voiced[0][mouth], crop[mouth]
    structure = measures.ssim(drawn, original)
    shift = float(np.abs(drawn.reshape(-1, 3).mean(axis=0) - original.reshape(-1, 3).mean(axis=0)).max())
    motion = float(np.abs(voiced[0][mouth].astype(np.float64) - quiet[0][mouth]).mean())
    failures = []
    if structure < MIN_LOWER_SSIM:
        failures.append(f"the lower face is not the photo's (SSIM {structure:.2f} < {MIN_LOWER_SSIM})")
    if shift > MAX_COLOUR_SHIFT:
        failures.append(f"colour cast: the lower face's mean colour moved {shift:.0f} levels")
    if motion < MIN_MOUTH_MOTION:
        failures.append(f"the mouth does not follow the sound (it moved {motion:.1f} levels)")
    return decide({"ssim": structure, "colour_shift": shift, "motion": motion}, failures,
                  "re-draws the photo's lower face, and it moves with the sound")


def judge_voice_extractor(name: str, ctx: Context) -> Finding:
    sound = check_voice(2.0)
    voice = np.asarray(build(name, ctx, FAMILIES).extract(sound), np.float64)
    given = sound.astype(np.float64) / 32767.0
    if not np.isfinite(voice).all():
        return Finding("FAIL", "gives non-finite samples", {})
    correlation = float(np.corrcoef(voice.ravel(), given.ravel())[0, 1]) if voice.std() > 0 else 0.0
    loudness = float(np.sqrt(np.mean(voice**2)) / max(np.sqrt(np.mean(given**2)), 1e-9))
    failures = []
    if correlation < MIN_VOICE_CORRELATION:
        failures.append(f"a voice alone does not come back (correlation {correlation:.2f})")
    if not VOICE_LOUDNESS[0] <= loudness <= VOICE_LOUDNESS[1]:
        failures.append(f"its loudness is ×{loudness:.2f} the voice's")
    return decide({"correlation": correlation, "loudness": loudness}, failures,
                  "a voice alone comes back, as loud")


JUDGES: dict[str, Judge] = {"lip_syncer": judge_lip_syncer, "voice_extractor": judge_voice_extractor}
