"""``age_modifier``: each chosen face made younger or older (fran, styleganex_age).

- ``processor.py``  the processor: each model's framing, run and masks
- ``age.py``        the sessions (FairFace, Fran, StyleGanExAge), the age buckets, each model's direction
- ``judge.py``      its ``models check`` judges (the two models, FairFace)
"""

from pipeline.processors.age_modifier.processor import AgeModifierProcessor

PROCESSOR = AgeModifierProcessor

__all__ = ["PROCESSOR", "AgeModifierProcessor"]
