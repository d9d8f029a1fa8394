"""Lip-sync models on a face's ffhq_512 crop (PROCESSORS.md §2.6), one module per concern:

- ``base.py``      the family Protocol (:class:`LipSyncModel`) and what one face hands it (:class:`Mouth`)
- ``geometry.py``  where the mouth is in the crop: the 68 points' box and lower-face mask, or (without a
                   68-point model) an estimate from the five points
- ``wav2lip.py``   wav2lip_96 / wav2lip_gan_96: the lower face at 96 px, re-drawn to the audio
- ``edtalk.py``    edtalk_256: the face at 256 px, re-made around the mouth
"""
