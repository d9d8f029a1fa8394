"""Swapper registry: resolves ``swapper.model`` (including ``auto``) to a Swapper."""

from __future__ import annotations

import logging
from collections.abc import Sequence

from pipeline.models import catalog, store
from pipeline.settings import SwapperSettings
from pipeline.swap.base import Swapper
from pipeline.types import Provider

log = logging.getLogger(__name__)

# ``auto`` takes the first installed of these, else the built-in classic swapper.
AUTO_ORDER = ("hyperswap_1a_256", "inswapper_128", "inswapper_128_fp16", "hyperswap_1b_256",
              "hyperswap_1c_256", "simswap_256", "ghost_2_256")

CLASSIC_NOTICE = ("no neural swapper is installed: using the built-in classic swapper (lower quality); "
                  "see `facestation models list` to install one")


def _on_gpu(providers: Sequence[Provider]) -> bool:
    from pipeline.models import sessions

    return sessions.resolve_providers(providers)[0] != "CPUExecutionProvider"


def resolve_name(name: str, providers: Sequence[Provider] = ("cpu",)) -> tuple[str, str | None]:
    """(swapper name to use, notice for the user or None).

    ``auto`` takes the first installed swapper of AUTO_ORDER; on a GPU provider a half-precision file is
    preferred to its full-precision twin when both are installed (near-identical output, half the memory
    traffic).
    """
    if name != "auto":
        return name, None
    gpu = _on_gpu(providers)
    for preferred in AUTO_ORDER:
        half = f"{preferred}_fp16"
        twins = (half, preferred) if gpu and half in catalog.CATALOG else (preferred,)
        for candidate in twins:
            entry = catalog.get(candidate)
            if store.is_installed(entry) and (entry.recogniser is None
                                              or store.is_installed(catalog.get(entry.recogniser))):
                return candidate, None
    return "classic", CLASSIC_NOTICE


def make_swapper(settings: SwapperSettings, providers: Sequence[Provider] = ("cpu",), threads: int = 0,
                 name: str | None = None) -> Swapper:
    """The swapper for ``settings``; ``name`` is the already resolved model name, if the caller has it."""
    name = name or resolve_name(settings.model, providers)[0]
    if name == "classic":
        from pipeline.swap.classic import ClassicSwapper

        return ClassicSwapper(poisson=settings.poisson)
    from pipeline.swap.neural import NeuralSwapper

    return NeuralSwapper(name, providers=tuple(providers), threads=threads)
