"""``face_swapper.model=auto``: the first installed swapper of :data:`AUTO_ORDER`, else the built-in classic
one (with a notice: lower quality)."""

from __future__ import annotations

from collections.abc import Sequence

from pipeline.models import catalog, store
from pipeline.types import Provider

# ``auto`` takes the first installed of these, else the built-in classic swapper.
AUTO_ORDER = ("hyperswap_1a_256", "inswapper_128", "inswapper_128_fp16", "hyperswap_1b_256",
              "hyperswap_1c_256", "simswap_256", "ghost_2_256")

CLASSIC = "classic"
CLASSIC_NOTICE = ("no neural swapper is installed: the built-in classic swapper is in use (lower quality); "
                  "install one such as hyperswap_1a_256 or inswapper_128 (see `facestation models list`)")


def _on_gpu(providers: Sequence[Provider]) -> bool:
    from pipeline.models import sessions

    return sessions.resolve_providers(providers)[0] != "CPUExecutionProvider"


def resolve_swapper(name: str, providers: Sequence[Provider] = ("cpu",)) -> str:
    """The swapper to use for ``name``: itself, or for ``auto`` the first installed swapper of AUTO_ORDER
    (with its recogniser installed), else :data:`CLASSIC`; on a GPU provider a half-precision file is
    preferred to its full-precision twin when both are installed (near-identical output, half the memory
    traffic)."""
    if name != "auto":
        return name
    gpu = _on_gpu(providers)
    for preferred in AUTO_ORDER:
        half = f"{preferred}_fp16"
        twins = (half, preferred) if gpu and half in catalog.CATALOG else (preferred,)
        for candidate in twins:
            entry = catalog.get(candidate)
            if store.is_installed(entry) and (entry.recogniser is None
                                              or store.is_installed(catalog.get(entry.recogniser))):
                return candidate
    return CLASSIC
