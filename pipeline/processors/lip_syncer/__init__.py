"""``lip_syncer``: each chosen face's mouth moved to the clip's sound (or a new voice).

- ``processor.py``  the processor: the clip's windows made once in prepare, the faces re-drawn to them
- ``base.py``       the lip-sync family Protocol and what one face hands it
- ``wav2lip.py``    wav2lip_96 / wav2lip_gan_96: the lower face at 96 px
- ``edtalk.py``     edtalk_256: the face at 256 px
- ``geometry.py``   where the mouth is in the crop (68 points, or estimated from five)
- ``voice.py``      the MDX-Net voice extractors: the voice out of music and noise
- ``mel.py``        the 80-band mel spectrogram, the 16-frame window each video frame hears
- ``clip.py``       a clip's windows, made once per clip and kept
- ``judge.py``      its ``models check`` judges (the lip syncers, the voice extractors)
"""

from pipeline.processors.lip_syncer.processor import LipSyncerProcessor

PROCESSOR = LipSyncerProcessor

__all__ = ["PROCESSOR", "LipSyncerProcessor"]
