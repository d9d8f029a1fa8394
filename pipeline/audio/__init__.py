"""Sound for the processors that hear it (the lip syncer): decode, voice extraction, mel, per-frame windows.

- ``decode.py``  any file's first audio stream -> 48 kHz int16 stereo (one ffmpeg child process), and the
                 check that a file has an audio stream at all
- ``voice.py``   the MDX-Net voice extractors (kim_vocal_1/2, uvr_mdxnet): the voice out of music and noise
- ``mel.py``     the voice -> the 80-band mel spectrogram wav2lip was trained on, and the 16-frame window
                 each video frame hears (:class:`~pipeline.processors.lip_syncer.mel.Windows`)
"""
