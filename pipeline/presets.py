"""Named presets: the settings model saved as a small JSON document.

A preset file is ``{"schema": N, "name": ..., "description": ..., "settings": {...}}`` where
``settings`` is :class:`~pipeline.settings.Settings` dumped as JSON. Settings may be partial: a
missing key takes its default. Older schema versions are migrated on load by a registry of
one-step functions (:data:`MIGRATIONS`); a newer schema than this build knows is refused.

Three shelves, looked up in this order:

- built-in presets ship in the repository (``presets/``) and cannot be changed or deleted;
- studio presets, shared by everyone on a shared workstation, live in ``<user presets>/studio/`` and are
  published (saved, deleted) by an admin only (``studio=True``);
- each user's own presets: the local user's (the CLI's, and the web UI's without a login) in
  :func:`pipeline.paths.user_presets_dir`, a signed-in user's in ``<user presets>/users/<name>-<hash>/``
  (``owner=`` the user name). Nobody reaches another user's shelf, so nobody can overwrite or delete
  another user's preset.

Names are unique across the shelves a user sees: an own preset cannot take a built-in or studio name,
nor a studio preset a built-in name, so a name means the same thing to everyone. (A file dropped by
hand under a name taken by an earlier shelf is ignored; the earlier shelf wins.)
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pipeline import paths
from pipeline.errors import SettingsError, UserError
from pipeline.settings import (
    RENAMED_SECTIONS,
    SCHEMA_VERSION,
    Settings,
    apply_overrides,
    keys,
    upgrade,
    validate,
    with_used_processors,
)

log = logging.getLogger(__name__)

SUFFIX = ".json"
MAX_NAME = 64
MAX_BYTES = 256 * 1024  # a preset is a few KiB; a larger file is not one (and would be printed whole)
MAX_DEPTH = 8  # {"settings": {"section": {"key": [..]}}} is 4
_NAME_RE = re.compile(r"[\w .-]+")  # \w: unicode letters, digits and "_"

Document = dict[str, Any]


class PresetExists(UserError):
    """Saving without ``overwrite`` under a name the shelf already has, in any case (``name``: as it is)."""

    def __init__(self, name: str) -> None:
        super().__init__(f"a preset named '{name}' already exists")
        self.name = name


@dataclass(frozen=True)
class PresetInfo:
    name: str
    builtin: bool
    description: str
    path: Path
    studio: bool = False  # shared by an admin with every user


@dataclass(frozen=True)
class Preset:
    name: str
    description: str
    settings: Settings
    builtin: bool
    path: Path | None


# ---------------------------------------------------------------- names


def safe_name(name: str) -> str:
    """Return ``name`` (surrounding spaces stripped) if it is a safe preset name, else raise UserError.

    Allowed: letters, digits, space, ``-``, ``_`` and ``.`` (not first, not last), 1..64 characters.
    Anything that could leave the presets folder (separators, ``..``, absolute paths, NUL,
    control characters) is refused.
    """
    if not isinstance(name, str):
        raise UserError(f"a preset name must be text, got {type(name).__name__}")
    cleaned = name.strip()
    shown = name.encode("unicode_escape").decode("ascii")
    rule = f"use 1-{MAX_NAME} letters, digits, spaces, '-', '_' or '.'"
    if not cleaned:
        raise UserError(f"a preset name cannot be empty: {rule}")
    if len(cleaned) > MAX_NAME:
        raise UserError(f"preset name is {len(cleaned)} characters long; {rule}")
    if "/" in cleaned or "\\" in cleaned or os.sep in cleaned or (os.altsep and os.altsep in cleaned):
        raise UserError(f"preset name '{shown}' contains a path separator; {rule}")
    if not _NAME_RE.fullmatch(cleaned):
        raise UserError(f"preset name '{shown}' contains a character that is not allowed; {rule}")
    if cleaned.startswith(".") or cleaned.endswith(".") or ".." in cleaned:
        raise UserError(f"preset name '{shown}' cannot start or end with '.' or contain '..'; {rule}")
    return cleaned


# ---------------------------------------------------------------- schema migration


def _v0_to_v1(doc: Document) -> Document:
    """v0 presets stored settings as flat ``section_key`` names with a few older spellings.

    e.g. ``{"detector_model": "yunet", "face_swapper_model": "classic", "execution_providers": ["cpu"]}``.
    """
    renamed = {
        "face_detector_model": "detector.model",
        "face_detector_score": "detector.score",
        "face_detector_size": "detector.size",
        "face_swapper_model": "swapper.model",
        "face_enhancer_model": "enhancer.model",
        "face_enhancer_blend": "enhancer.blend",
        "face_mask_types": "mask.types",
        "face_mask_blur": "mask.blur",
        "color_transfer": "color.method",
        "output_video_quality": "output.quality",
        "output_video_encoder": "output.encoder",
        "output_video_preset": "output.preset",
        "execution_thread_count": "execution.threads",
    }
    known = _schema_1_keys()
    sections = sorted({k.split(".", 1)[0] for k in known}, key=len, reverse=True)
    nested: dict[str, dict[str, Any]] = {}
    for flat, value in dict(doc.get("settings") or {}).items():
        dotted = renamed.get(flat)
        if dotted is None:
            section = next((s for s in sections if flat.startswith(s + "_")), None)
            dotted = f"{section}.{flat[len(section) + 1 :]}" if section else None
        if dotted is None or dotted not in known:
            raise SettingsError(f"unknown settings key '{flat}' in a schema 0 preset")
        section, key = dotted.split(".", 1)
        nested.setdefault(section, {})[key] = value
    return {**doc, "schema": 1, "settings": nested}


def _schema_1_keys() -> set[str]:
    """Every settings key as schema 1 named it (the sections renamed since under their old names)."""
    old = {new: old for old, new in RENAMED_SECTIONS.items()}
    return {f"{old.get(section, section)}.{name}" for section, name in (k.split(".", 1) for k in keys())}


def _v1_to_v2(doc: Document) -> Document:
    """v1 named the face swapper's and the face enhancer's sections ``swapper`` and ``enhancer``; v2 gives
    them their processors' names (``face_swapper``, ``face_enhancer``)."""
    settings = doc.get("settings")
    return {**doc, "schema": 2, **({"settings": upgrade(settings)} if isinstance(settings, dict) else {})}


# MIGRATIONS[n] turns a schema-n document into a schema-(n+1) one.
MIGRATIONS: dict[int, Callable[[Document], Document]] = {0: _v0_to_v1, 1: _v1_to_v2}


def migrate(doc: Document) -> Document:
    """Bring a preset document up to :data:`SCHEMA_VERSION`, one step at a time."""
    if not isinstance(doc, dict):
        raise SettingsError("a preset file must hold a JSON object")
    if "schema" not in doc and "settings" not in doc and "version" in doc:
        doc = {"schema": doc["version"], "settings": doc}  # a bare settings dump (settings.to_json)
    schema = doc.get("schema")
    if not isinstance(schema, int) or isinstance(schema, bool) or schema < 0:
        raise SettingsError(f"preset 'schema' must be a whole number >= 0, got {schema!r}")
    if schema > SCHEMA_VERSION:
        raise SettingsError(
            f"preset schema {schema} is newer than this facestation understands ({SCHEMA_VERSION}); "
            "update facestation to use it"
        )
    while schema < SCHEMA_VERSION:
        doc = MIGRATIONS[schema](doc)
        log.debug("migrated preset %r from schema %d to %d", doc.get("name"), schema, schema + 1)
        schema = doc["schema"]
    return doc


def parse(doc: Document) -> tuple[Settings, str]:
    """Migrate and validate a preset document; returns (settings, description)."""
    doc = migrate(doc)
    unknown = set(doc) - {"schema", "name", "description", "settings"}
    if unknown:
        raise SettingsError(
            f"unknown preset field '{sorted(unknown)[0]}' (valid: schema, name, description, settings)"
        )
    data = doc.get("settings", {})
    if not isinstance(data, dict):
        raise SettingsError("preset 'settings' must be a JSON object")
    version = data.get("version", SCHEMA_VERSION)
    if version != SCHEMA_VERSION:
        raise SettingsError(f"settings.version: expected {SCHEMA_VERSION}, got {version!r}")
    description = doc.get("description", "")
    if not isinstance(description, str):
        raise SettingsError("preset 'description' must be text")
    settings = validate({**data, "version": SCHEMA_VERSION}, strict=True)
    given = [f"{section}.{key}" for section, values in data.items() if isinstance(values, dict)
             for key in values]
    return with_used_processors(settings, given), description


def document(name: str, settings: Settings, description: str = "") -> Document:
    return {
        "schema": SCHEMA_VERSION,
        "name": name,
        "description": description,
        "settings": settings.model_dump(mode="json"),
    }


# ---------------------------------------------------------------- files


def _read_json(path: Path) -> Document:
    with contextlib.suppress(OSError):
        size = path.stat().st_size
        if size > MAX_BYTES:
            raise SettingsError(f"{path.name} is {size / 1e6:.1f} MB: a preset file is at most "
                                f"{MAX_BYTES // 1024} KiB (is it a preset?)")
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UserError(f"preset file not found: {path}") from None
    except UnicodeDecodeError:
        raise SettingsError(f"{path} is not a preset: not UTF-8 text (a binary file?)") from None
    except IsADirectoryError:
        raise UserError(f"{path} is a folder, not a preset file") from None
    except OSError as exc:
        raise UserError(f"cannot read preset file {path}: {exc.strerror}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SettingsError(f"{path.name} is not valid JSON (line {exc.lineno}: {exc.msg})") from None
    except RecursionError:
        data = None
    if data is None or _depth(data) > MAX_DEPTH:
        raise SettingsError(f"{path.name} nests deeper than a preset does (at most {MAX_DEPTH} levels)")
    if not isinstance(data, dict):
        raise SettingsError(f"{path.name} must hold a JSON object")
    return data


def _depth(value: Any) -> int:
    """How deeply ``value`` nests lists and objects (a scalar: 0), without recursion."""
    deepest, stack = 0, [(value, 0)]
    while stack:
        item, level = stack.pop()
        children = item.values() if isinstance(item, dict) else item if isinstance(item, list) else None
        if children is not None:
            deepest = max(deepest, level + 1)
            stack.extend((child, level + 1) for child in children)
    return deepest


def _write_atomic(path: Path, doc: Document) -> None:
    paths.write_atomic(path, (json.dumps(doc, indent=2, ensure_ascii=False) + "\n").encode("utf-8"))


def _scan(folder: Path, builtin: bool, studio: bool = False) -> dict[str, PresetInfo]:
    found: dict[str, PresetInfo] = {}
    if not folder.is_dir():
        return found
    for path in sorted(folder.glob(f"*{SUFFIX}")):
        name = path.stem
        try:
            safe_name(name)
            description = _read_json(path).get("description", "")
        except UserError as exc:
            log.warning("skipping preset file %s: %s", path, exc)
            continue
        text = description if isinstance(description, str) else ""
        found[name] = PresetInfo(name, builtin, text, path, studio)
    return found


def studio_dir() -> Path:
    return paths.user_presets_dir() / "studio"


def user_dir(owner: str | None = None) -> Path:
    """The shelf of ``owner`` (None or "": the local user). A user name becomes a safe folder name plus a
    hash of the exact name, so two names never share a folder."""
    if not owner:
        return paths.user_presets_dir()
    stem = re.sub(r"[^A-Za-z0-9_-]+", "_", owner).strip("_")[:32] or "user"
    return paths.user_presets_dir() / "users" / f"{stem}-{hashlib.sha256(owner.encode()).hexdigest()[:12]}"


def _all(owner: str | None = None) -> dict[str, PresetInfo]:
    shelves = (_scan(paths.builtin_presets_dir(), builtin=True), _scan(studio_dir(), False, studio=True),
               _scan(user_dir(owner), builtin=False))
    found: dict[str, PresetInfo] = {}
    for shelf in shelves:
        found |= {n: i for n, i in shelf.items() if n.lower() not in {k.lower() for k in found}}
    return found


def list_presets(owner: str | None = None) -> list[PresetInfo]:
    """Every preset ``owner`` sees: built-ins first, then studio presets, then their own, each sorted."""
    return sorted(_all(owner).values(), key=lambda i: (not i.builtin, not i.studio, i.name.lower()))


def _is_path(name_or_path: str | Path) -> bool:
    text = str(name_or_path)
    return isinstance(name_or_path, Path) or text.endswith(SUFFIX) or "/" in text or os.sep in text


def _find(name: str, owner: str | None = None) -> PresetInfo:
    presets = _all(owner)
    info = presets.get(name.strip())
    if info is None:
        available = ", ".join(i.name for i in list_presets(owner)) or "none"
        raise UserError(f"no preset named '{name}' (available: {available})")
    return info


def read(name_or_path: str | Path, owner: str | None = None) -> Preset:
    """Load a preset by name or from a file, with its description.

    A :class:`~pathlib.Path`, or text ending in ``.json`` or containing a path separator, is a file;
    anything else is a preset name.
    """
    if _is_path(name_or_path):
        path = Path(name_or_path).expanduser()
        doc = _read_json(path)
        name, builtin = str(doc.get("name") or path.stem), False
    else:
        info = _find(str(name_or_path), owner)
        path, name, builtin = info.path, info.name, info.builtin
        doc = _read_json(path)
    try:
        settings, description = parse(doc)
    except SettingsError as exc:
        raise SettingsError(f"preset '{name}' ({path}): {exc}") from None
    return Preset(name, description, settings, builtin, path)


def load(name_or_path: str | Path, owner: str | None = None) -> Settings:
    """Settings of a preset given by name or ``.json`` path (a name as ``owner`` sees it)."""
    return read(name_or_path, owner).settings


def settings_from(preset: str | Path | None = None, overrides: Sequence[str] | None = None) -> Settings:
    """The settings a command runs with: ``preset`` (a name or a ``.json`` path; none: the defaults) with
    ``section.key=value`` overrides applied on top. A bad key or value raises SettingsError naming it."""
    base = load(preset) if preset else Settings()
    return apply_overrides(base, list(overrides or []))


def _taken(studio: bool) -> dict[str, str]:
    """Lower-cased names a new preset on this shelf may not take -> the shelf that has them."""
    taken = {n.lower(): "built-in" for n in _scan(paths.builtin_presets_dir(), builtin=True)}
    if not studio:
        taken |= {n.lower(): "studio" for n in _scan(studio_dir(), False, studio=True)}
    return taken


def _user_path(name: str, owner: str | None = None, studio: bool = False) -> Path:
    cleaned = safe_name(name)
    shelf = _taken(studio).get(cleaned.lower())
    if shelf:
        raise UserError(f"'{cleaned}' is a {shelf} preset and cannot be changed; save under another name")
    folder = (studio_dir() if studio else user_dir(owner)).resolve()
    path = (folder / f"{cleaned}{SUFFIX}").resolve()
    if path.parent != folder:  # belt and braces: safe_name already refuses anything that could escape
        raise UserError(f"preset name '{cleaned}' would leave the presets folder")
    return path


def save(name: str, settings: Settings, description: str = "", *, overwrite: bool = True,
         owner: str | None = None, studio: bool = False) -> Path:
    """Save ``settings`` on ``owner``'s shelf (or the studio's); returns its file. Nothing is written if
    the name is refused, nor without ``overwrite`` if the shelf has the name in any case (PresetExists);
    with it, the preset of that name is replaced (and takes the case given). Who may publish to the studio
    is the caller's check (the web UI: admins)."""
    if not isinstance(settings, Settings):
        raise TypeError(f"save() needs a Settings object, got {type(settings).__name__}")
    path = _user_path(name, owner, studio)
    # one name, one file, whatever the file system: on a shelf, as across shelves, "Mine" is "mine"
    same = [p for p in sorted(path.parent.glob(f"*{SUFFIX}")) if p.stem.lower() == path.stem.lower()]
    if same and not overwrite:
        raise PresetExists(same[0].stem)
    _write_atomic(path, document(path.stem, settings, description))
    for old in same:  # replaced: "mine.json" goes when "Mine.json" is written (unless they are one file)
        if old.name != path.name and not os.path.samefile(old, path):
            old.unlink()
    log.info("saved %spreset %r to %s", "studio " if studio else "", path.stem, path)
    return path


def delete(name: str, *, owner: str | None = None, studio: bool = False) -> None:
    """Delete one of ``owner``'s presets (``studio``: a studio preset). Built-in presets cannot be deleted,
    studio presets only with ``studio=True``."""
    info = _find(safe_name(name), owner)
    if info.builtin:
        raise UserError(f"'{info.name}' is a built-in preset and cannot be deleted")
    if info.studio != studio:
        raise UserError(f"'{info.name}' is a studio preset: only an admin can delete it" if info.studio
                        else f"'{info.name}' is not a studio preset")
    info.path.unlink()
    log.info("deleted %spreset %r", "studio " if studio else "", info.name)


def export(name: str, destination: str | Path, owner: str | None = None, *, overwrite: bool = False) -> Path:
    """Write a preset ``owner`` sees to ``destination`` (a file, or a folder to put ``NAME.json`` in).
    An existing file is replaced only with ``overwrite``."""
    preset = read(safe_name(name), owner)
    dest = Path(destination).expanduser()
    if dest.is_dir():
        dest = dest / f"{preset.name}{SUFFIX}"
    if dest.exists() and not overwrite:
        raise UserError(f"{dest} already exists; add --force to replace it")
    if dest.exists() and not dest.is_file():
        raise UserError(f"{dest} is not a regular file; give a file name")
    _write_atomic(dest, document(preset.name, preset.settings, preset.description))
    return dest


def import_file(path: str | Path, name: str | None = None, *, overwrite: bool = False,
                owner: str | None = None) -> Path:
    """Validate (and migrate) a preset file and save it as one of ``owner``'s presets named ``name``.

    Without ``name`` the file's own ``name`` field is used, else its file name.
    """
    source = Path(path).expanduser()
    doc = _read_json(source)
    target = name if name is not None else str(doc.get("name") or source.stem)
    _user_path(target, owner)  # refuse a bad name before the (slower) validation
    try:
        settings, description = parse(doc)
    except SettingsError as exc:
        raise SettingsError(f"{source.name}: {exc}") from None
    return save(target, settings, description, overwrite=overwrite, owner=owner)
