"""One Gradio control per settings key, derived from the settings model (never from retyped lists).

Choices come from the ``Literal`` vocabulary with ``typing.get_args``; slider ranges from the pydantic
field constraints (``ge``/``le``/``gt``/``multiple_of``). :func:`settings_from` turns the controls'
values back into a validated :class:`~pipeline.settings.Settings`, :func:`values_of` does the reverse.
The settings groups (Detector, Mask & Colour, Output; every processor's in the Processors area) are only these
controls
(:func:`create_tab`); they have no callbacks of their own: a change re-renders the preview
(``preview_panel.wire``). :class:`SettingsForm` holds every control of the page, to read or show settings.
"""

from __future__ import annotations

import typing
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gradio as gr
from annotated_types import Ge, Gt, Le, MultipleOf
from pydantic.fields import FieldInfo

from pipeline import api
from webui.clamped import ClampedNumber, ClampedSlider

PROCESSORS_TAB = "Processors"  # every processor's settings, beside its tick box (the Processors area)
# which tab shows which settings section that is no processor's
GENERAL_TABS: dict[str, str] = {
    "selector": "Faces",
    "detector": "Detector",
    "landmarks": "Detector",
    "tracker": "Detector",
    "processors": PROCESSORS_TAB,
    "mask": "Mask & Colour",
    "color": "Mask & Colour",
    "output": "Output",
    "video": "Output",
    "execution": "Output",
    "report": "Output",
}
GENERAL_TITLES = {"detector": "Face detection", "landmarks": "Face landmarks", "tracker": "Video tracking",
                  "mask": "Mask", "color": "Colour", "output": "Output file", "video": "Video trim and sound",
                  "execution": "Performance", "selector": "Which faces",
                  "report": "Quality report"}


def _section_tabs() -> dict[str, str]:
    """Which tab shows which settings section; every section except ``version`` appears exactly once, a
    processor's in the Processors area (beside its tick box, shown while it runs)."""
    return dict(GENERAL_TABS) | {p.section: PROCESSORS_TAB for p in api.processors()}


SECTION_TABS = _section_tabs()
SECTION_TITLES = GENERAL_TITLES | {p.section: p.title for p in api.processors()}
# Gradio's dropdown sends the choice value "none" back as null; such choices travel under this value instead
NONE_VALUE = "_none"
# set by clicking a face in the gallery, never typed (a server path)
READ_ONLY = frozenset({"selector.reference", "selector.mapping"})


def _literal_choices(annotation: Any) -> list[Any] | None:
    if typing.get_origin(annotation) is typing.Literal:
        return list(typing.get_args(annotation))
    return None


def _is_text_list(key: str) -> bool:
    """A tuple setting shown as comma-separated text (mask.padding, selector.mapping), not a CheckboxGroup."""
    annotation = api.settings_keys()[key].annotation
    args = typing.get_args(annotation)
    return typing.get_origin(annotation) is tuple and not (args and _literal_choices(args[0]) is not None)


def _is_optional(key: str) -> bool:
    """A setting that may be None (shown as empty text)."""
    return type(None) in typing.get_args(api.settings_keys()[key].annotation)


def _constraints(info: FieldInfo) -> dict[str, float]:
    out: dict[str, float] = {}
    for meta in info.metadata:
        if isinstance(meta, Ge):
            out["min"] = float(meta.ge)  # type: ignore[arg-type]
        elif isinstance(meta, Gt):
            out["min"] = float(meta.gt)  # type: ignore[arg-type]
        elif isinstance(meta, Le):
            out["max"] = float(meta.le)  # type: ignore[arg-type]
        elif isinstance(meta, MultipleOf):
            out["step"] = float(meta.multiple_of)  # type: ignore[arg-type]
    return out


def _unwrap(annotation: Any) -> tuple[Any, FieldInfo | None]:
    """``Annotated[float, Field(...)]`` -> (float, its FieldInfo)."""
    if typing.get_origin(annotation) is typing.Annotated:
        base, *extra = typing.get_args(annotation)
        infos = [e for e in extra if isinstance(e, FieldInfo)]
        return base, infos[0] if infos else None
    return annotation, None


def _label(key: str, info: FieldInfo) -> str:
    """The field's title (plain words with the unit), else its key in words."""
    return info.title or key.split(".", 1)[1].replace("_", " ").capitalize()


def _ui_range(info: FieldInfo) -> dict[str, float]:
    """A slider range narrower than the validation range, where the settings field gives one."""
    low_high = _extra(info).get("ui_range")
    if isinstance(low_high, list | tuple) and len(low_high) == 2:
        return {"min": float(low_high[0]), "max": float(low_high[1])}
    return {}


def _extra(info: FieldInfo) -> dict[str, Any]:
    """The UI facts a settings field carries (``json_schema_extra``: main, choice_words, ui_range,
    placeholder, suggest)."""
    return info.json_schema_extra if isinstance(info.json_schema_extra, dict) else {}


# the settings that choose a catalog model (their choices say "(not installed, 340 MB)")
MODEL_KEYS = tuple(key for key, info in api.settings_keys().items()
                   if any(api.is_model(str(c)) for c in _literal_choices(_unwrap(info.annotation)[0]) or []))
# the settings that matter most, shown on the main screen beside the preview; the rest are "advanced"
MAIN_KEYS = tuple(key for key, info in api.settings_keys().items() if _extra(info).get("main"))
BATCH_CHOICES = ["auto", "1", "2", "4", "8", "16"]


def choice_pairs(key: str, choices: Sequence[Any]) -> list[tuple[str, Any]]:
    """(label, value) per choice: models marked "(not installed, 340 MB)", encoders limited to those that
    really open here."""
    if key == "output.encoder":
        usable = api.usable_encoders()
        choices = [c for c in choices if c in usable]
    words = dict(_extra(api.settings_keys()[key]).get("choice_words", ()))  # a value in words
    pairs = []
    for c in choices:
        label = "(none)" if c == "none" else api.choice_label(str(c)) if key in MODEL_KEYS else str(c)
        pairs.append((words.get(c, label), NONE_VALUE if c == "none" else c))
    return pairs


def model_choice_updates() -> list[dict[str, Any]]:
    """Fresh dropdown choices for every model setting (MODEL_KEYS order), after a model was installed."""
    fields = api.settings_keys()
    return [gr.update(choices=choice_pairs(k, _literal_choices(_unwrap(fields[k].annotation)[0]) or []))
            for k in MODEL_KEYS]


def make_control(key: str, info: FieldInfo, value: Any) -> gr.components.Component:
    """The widget for one settings key, with ``elem_id`` = ``set-section-key`` for tests and styling."""
    annotation, inner = _unwrap(info.annotation)
    elem_id = "set-" + key.replace(".", "-")
    common: dict[str, Any] = {"label": _label(key, info), "info": info.description, "elem_id": elem_id}
    choices = _literal_choices(annotation)
    if choices is not None:
        return gr.Dropdown(choices=choice_pairs(key, choices), value=NONE_VALUE if value == "none" else value,
                           **common)
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if key == "execution.providers":  # only what really works here; what does not is dropped, not ticked
        usable = list(api.usable_providers())
        return gr.CheckboxGroup(choices=usable, value=[v for v in value if v in usable] or ["cpu"], **common)
    if key == "processors.order":  # a list in the order chosen (a checkbox group would sort it)
        return gr.Dropdown(choices=_literal_choices(args[0]), value=list(value), multiselect=True, **common)
    if origin is tuple and len(args) == 2 and args[1] is Ellipsis and _literal_choices(args[0]):
        return gr.CheckboxGroup(choices=_literal_choices(args[0]), value=list(value), **common)
    if annotation is bool:
        return gr.Checkbox(value=value, **common)
    if annotation in (int, float):
        limits = _constraints(info) | (_constraints(inner) if inner else {}) | _ui_range(info)
        if "min" in limits and "max" in limits:
            step = limits.get("step") or (1 if annotation is int else 0.01)
            return ClampedSlider(limits["min"], limits["max"], value=value, step=step, **common)
        return ClampedNumber(value=value, precision=0 if annotation is int else None,
                             minimum=limits.get("min"), maximum=limits.get("max"), **common)
    if args and type(None) in args and str in args:  # optional text: empty = None
        return gr.Textbox(value=value or "", interactive=key not in READ_ONLY, **common)
    if args and type(None) in args:  # optional number: empty text = None (gr.Number would send 0)
        return gr.Textbox(value="" if value is None else str(value),
                          placeholder=_extra(info).get("placeholder", "none"), **common)
    if origin is tuple:  # fixed tuple of ints (mask.padding) or a list of paths: "a, b, c"
        return gr.Textbox(value=", ".join(str(v) for v in value), interactive=key not in READ_ONLY, **common)
    if key == "execution.batch_size":  # "auto" or a number: a choice (a preset's other number still shows)
        return gr.Dropdown(choices=BATCH_CHOICES, value=str(value), allow_custom_value=True, **common)
    if suggest := _extra(info).get("suggest"):  # a free text with its usual values in a menu
        return gr.Dropdown(choices=list(suggest), value=str(value), allow_custom_value=True, **common)
    return gr.Textbox(value=str(value), **common)


def create_section(section: str, settings: api.Settings,
                   skip: Sequence[str] = ()) -> dict[str, gr.components.Component]:
    """Controls of one settings section, in declaration order, keyed ``section.key`` (but ``skip``)."""
    out: dict[str, gr.components.Component] = {}
    current = getattr(settings, section)
    for key, info in api.settings_keys().items():
        if key.split(".", 1)[0] != section or key in skip:
            continue
        out[key] = make_control(key, info, getattr(current, key.split(".", 1)[1]))
    return out


def _to_setting(key: str, value: Any) -> Any:
    if value == NONE_VALUE:
        return "none"
    if value == "" and _is_optional(key):
        return None
    if isinstance(value, float) and value.is_integer():
        annotation, _ = _unwrap(api.settings_keys()[key].annotation)
        if annotation is int or _literal_choices(annotation) is not None:
            return int(value)
    if isinstance(value, str) and _is_text_list(key):
        return text_list(value)
    return value


def text_list(value: str | None) -> list[str]:
    """A list setting's text box ("a, b") as its items."""
    return [p.strip() for p in (value or "").split(",") if p.strip()]


def settings_from(keys: Sequence[str], values: Sequence[Any],
                  base: api.Settings | None = None) -> api.Settings:
    """Validated settings from control values (raises SettingsError naming the bad key)."""
    overrides = {k: _to_setting(k, v) for k, v in zip(keys, values, strict=True)}
    return api.apply_overrides(base or api.Settings(), overrides)


def values_of(keys: Sequence[str], settings: api.Settings) -> list[Any]:
    """Control values showing ``settings``, in the order of ``keys``."""
    out: list[Any] = []
    for key in keys:
        section, name = key.split(".", 1)
        value = getattr(getattr(settings, section), name)
        if isinstance(value, tuple) and _is_text_list(key):
            value = ", ".join(str(v) for v in value)
        elif isinstance(value, tuple):
            value = list(value)
        elif key in ("execution.batch_size", "detector.interval"):  # "auto" or N, in a text box
            value = str(value)
        elif value == "none":
            value = NONE_VALUE
        elif value is None:
            value = ""
        elif _is_optional(key) and not isinstance(value, str):
            value = str(value)
        out.append(value)
    return out




def create_main(settings: api.Settings) -> dict[str, gr.components.Component]:
    """The main settings (MAIN_KEYS: the settings fields marked ``main``), two by two."""
    fields = api.settings_keys()
    out: dict[str, gr.components.Component] = {}
    with gr.Group(elem_id="main-settings"):
        for pair in (MAIN_KEYS[i:i + 2] for i in range(0, len(MAIN_KEYS), 2)):
            with gr.Row():
                for key in pair:
                    section, name = key.split(".", 1)
                    out[key] = make_control(key, fields[key], getattr(getattr(settings, section), name))
    return out


def create_tab(tab: str, settings: api.Settings) -> dict[str, gr.components.Component]:
    """A group of advanced settings: one labelled accordion per settings section shown on ``tab`` (see
    SECTION_TABS), without the main settings (shown on the main screen)."""
    out: dict[str, gr.components.Component] = {}
    for section, where in SECTION_TABS.items():
        if where == tab:
            with gr.Accordion(SECTION_TITLES.get(section, section.capitalize()), open=True):
                made = create_section(section, settings, skip=MAIN_KEYS)
                out |= made
    return out


@dataclass(frozen=True)
class SettingsForm:
    """Every settings control of the page, keyed ``section.key``: read them into settings, or show settings.

    Callbacks take ``form.inputs`` as their last inputs (``*vals``) and call ``form.read(vals)``.
    """

    controls: dict[str, Any]

    @property
    def keys(self) -> list[str]:
        return list(self.controls)

    @property
    def inputs(self) -> list[Any]:
        return list(self.controls.values())

    def __getitem__(self, key: str) -> Any:
        return self.controls[key]

    def read(self, values: Sequence[Any]) -> api.Settings:
        """Settings shown by the controls; a reference path must be one the app saved itself."""
        settings = settings_from(self.keys, values)
        folder = api.references_dir().resolve()
        for ref in [settings.selector.reference, *settings.selector.mapping]:
            if ref is not None and Path(ref).resolve().parent != folder:
                raise api.UserError("reference faces must be picked from the faces gallery")
        return settings

    def show(self, settings: api.Settings) -> list[Any]:
        """Control values showing ``settings``, in the order of ``inputs``; a provider or an encoder that
        does not work on this machine is not shown (the controls do not offer it)."""
        values = values_of(self.keys, settings)
        for i, key in enumerate(self.keys):
            if key == "execution.providers":
                values[i] = [p for p in values[i] if p in api.usable_providers()] or ["cpu"]
            elif key == "output.encoder" and values[i] not in api.usable_encoders():
                values[i] = "auto"
        return values
