"""Typed errors with messages a user can act on.

``UserError`` and its subclasses are the user's to fix (CLI exit 2, one line; web UI warning).
Anything else is an internal error (CLI exit 1).
"""

from __future__ import annotations


class FacestationError(Exception):
    """Base of every error the engine raises on purpose."""


class UserError(FacestationError):
    """Bad input, a missing model, no face: the user can fix it. Exit code 2."""


class BadMedia(UserError):
    """A file that is missing, empty, truncated, not an image/video, or too large."""


class NoFaceFound(UserError):
    """No face where one is needed."""


class ModelMissing(UserError):
    """A model is selected but its file is not installed."""


class ModelMismatch(UserError):
    """A model file whose hash or I/O signature does not match its catalog entry."""


class SettingsError(UserError):
    """Unknown settings key or a value out of range; the message names the key."""


class Cancelled(FacestationError):
    """A render stopped because its job was cancelled."""
