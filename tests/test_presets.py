from __future__ import annotations

import json
from pathlib import Path

import pytest

from pipeline import paths, presets
from pipeline.checks import unused_settings
from pipeline.errors import SettingsError, UserError
from pipeline.settings import SCHEMA_VERSION, Settings, apply_overrides, validate

BUILTINS = {"fast-preview", "balanced-1080p", "best-quality-4k", "cpu-offline"}


def _custom() -> Settings:
    data = Settings().model_dump()
    data["detector"].update(model="scrfd", score=0.62, size=480)
    data["face_swapper"].update(model="inswapper_128", pixel_boost=256)
    data["face_enhancer"].update(model="codeformer", blend=35, fidelity=0.7)
    data["mask"].update(types=("box", "region"), padding=(1, 2, 3, 4), regions=("skin", "nose"))
    data["execution"].update(providers=("cuda", "cpu"), batch_size=6)
    data["video"].update(start=1.5, end=9.25)
    return validate(data)


def _user_files() -> list[Path]:
    return sorted(paths.user_presets_dir().iterdir())


def test_builtins_are_listed_and_valid() -> None:
    infos = presets.list_presets()
    builtins = {i.name: i for i in infos if i.builtin}
    assert set(builtins) == BUILTINS
    for name, info in builtins.items():
        assert info.path.parent == paths.builtin_presets_dir()
        assert info.description
        raw = json.loads(info.path.read_text())
        assert raw["schema"] == SCHEMA_VERSION and raw["name"] == name
        settings = presets.load(name)
        # the file is complete and already canonical: re-dumping gives the same data
        assert settings.model_dump(mode="json") == raw["settings"]


def test_builtins_say_what_they_promise() -> None:
    cpu = presets.load("cpu-offline")
    assert cpu.execution.providers == ("cpu",)
    assert cpu.detector.model == "yunet" and "face_enhancer" not in cpu.processors.order
    assert cpu.face_swapper.model in ("classic", "auto")
    best = presets.load("best-quality-4k")
    fast = presets.load("fast-preview")
    assert best.face_swapper.pixel_boost == 512 and best.face_enhancer.model != "none"
    assert best.output.quality > presets.load("balanced-1080p").output.quality > fast.output.quality
    assert fast.detector.size < best.detector.size
    for info in [i for i in presets.list_presets() if i.builtin]:  # none ticks a processor doing nothing
        assert unused_settings(presets.load(info.name)) == [], info.name


def test_round_trip(isolated_dirs: dict[str, Path]) -> None:
    original = _custom()
    path = presets.save("My Look_2.0", original, description="for the wedding clip")
    assert path.parent == paths.user_presets_dir()
    assert str(path).startswith(str(isolated_dirs["data"]))
    loaded = presets.load("My Look_2.0")
    assert loaded == original
    assert presets.load(path) == original  # by path too
    info = next(i for i in presets.list_presets() if i.name == "My Look_2.0")
    assert not info.builtin and info.description == "for the wedding clip"
    assert [p.name for p in _user_files()] == ["My Look_2.0.json"]  # no temp file left behind


def test_partial_settings_take_defaults(tmp_path: Path) -> None:
    file = tmp_path / "partial.json"
    file.write_text(json.dumps({"schema": 1, "name": "partial", "settings": {"enhancer": {"blend": 10}}}))
    loaded = presets.load(file)
    assert loaded.face_enhancer.blend == 10
    assert loaded.detector == Settings().detector


@pytest.mark.parametrize(
    ("settings", "key"),
    [
        ({"detector": {"modle": "yunet"}}, "detector.modle"),
        ({"colour": {}}, "colour"),
        ({"detector": {"score": 1.5}}, "detector.score"),
        ({"output": {"quality": 101}}, "output.quality"),
        ({"mask": {"padding": [0, 0, 0, 200]}}, "mask.padding"),
    ],
)
def test_bad_settings_refused_naming_the_key(tmp_path: Path, settings: dict, key: str) -> None:
    file = tmp_path / "bad.json"
    file.write_text(json.dumps({"schema": 1, "name": "bad", "settings": settings}))
    with pytest.raises(SettingsError, match=key.replace(".", r"\.")):
        presets.load(file)
    with pytest.raises(SettingsError, match=key.replace(".", r"\.")):
        presets.import_file(file)
    assert _user_files() == []


@pytest.mark.parametrize(
    "name",
    [
        "../../x",
        "/etc/x",
        "",
        "   ",
        "a/b",
        "a\\b",
        "..",
        ".hidden",
        "nul\x00byte",
        "tab\tname",
        "x" * 65,
        "semi;colon",
        "trailing.",
    ],
)
def test_unsafe_names_refused_and_nothing_written(name: str, tmp_path: Path) -> None:
    with pytest.raises(UserError, match="preset name"):
        presets.save(name, Settings())
    assert _user_files() == []
    # nothing written outside either
    assert not (tmp_path / "x").exists() and not Path("/etc/x").exists()
    with pytest.raises(UserError, match="preset name"):
        presets.safe_name(name)


def test_safe_names_accepted() -> None:
    assert presets.safe_name("  Best 4K v1.2_final-b ") == "Best 4K v1.2_final-b"
    assert presets.safe_name("Ünïcødé") == "Ünïcødé"
    assert presets.safe_name("x" * 64) == "x" * 64


def test_unknown_name_lists_available() -> None:
    with pytest.raises(UserError) as info:
        presets.load("nope")
    message = str(info.value)
    assert "nope" in message and all(b in message for b in BUILTINS)


def test_builtins_cannot_be_overwritten_or_deleted() -> None:
    builtin_file = paths.builtin_presets_dir() / "cpu-offline.json"
    before = builtin_file.read_bytes()
    with pytest.raises(UserError, match="built-in"):
        presets.save("cpu-offline", _custom())
    with pytest.raises(UserError, match="built-in"):
        presets.save("CPU-Offline", _custom())
    with pytest.raises(UserError, match="built-in"):
        presets.delete("cpu-offline")
    assert builtin_file.read_bytes() == before
    assert _user_files() == []


def test_delete_and_overwrite() -> None:
    presets.save("mine", Settings())
    with pytest.raises(UserError, match="already exists"):
        presets.save("mine", _custom(), overwrite=False)
    presets.save("mine", _custom())
    assert presets.load("mine") == _custom()
    presets.delete("mine")
    assert _user_files() == []
    with pytest.raises(UserError, match="no preset named 'mine'"):
        presets.delete("mine")


def test_a_name_in_another_case_is_the_same_preset_on_its_shelf() -> None:
    presets.save("mine", Settings(), "first")
    with pytest.raises(presets.PresetExists, match="'mine' already exists") as info:
        presets.save("Mine", _custom(), overwrite=False)
    assert info.value.name == "mine" and [p.name for p in _user_files()] == ["mine.json"]
    presets.save("Mine", _custom(), "second")  # replaces it: one file, in the case given
    assert [p.name for p in _user_files()] == ["Mine.json"]
    assert presets.read("Mine").description == "second" and presets.load("Mine") == _custom()
    presets.save("mine", Settings(), owner="ann")  # another shelf: not the same preset
    with pytest.raises(presets.PresetExists):
        presets.save("MINE", Settings(), overwrite=False, owner="ann")


def test_export_import(tmp_path: Path) -> None:
    presets.save("shared", _custom(), "team look")
    exported = presets.export("shared", tmp_path)
    assert exported == tmp_path / "shared.json"
    presets.delete("shared")
    path = presets.import_file(exported, name="shared copy")
    assert path.name == "shared copy.json"
    assert presets.read("shared copy").description == "team look"
    assert presets.load("shared copy") == _custom()
    with pytest.raises(UserError, match="already exists"):
        presets.import_file(exported, name="shared copy")
    with pytest.raises(UserError, match="preset name"):
        presets.import_file(exported, name="../evil")
    # a built-in can be exported, then imported under a new name
    presets.import_file(presets.export("best-quality-4k", tmp_path / "b.json"), name="best mine")
    assert presets.load("best mine") == presets.load("best-quality-4k")


def test_import_of_a_bare_settings_dump(tmp_path: Path) -> None:
    file = tmp_path / "dump.json"
    file.write_text(_custom().model_dump_json())
    presets.import_file(file)
    assert presets.load("dump") == _custom()


def test_migration_from_schema_0(tmp_path: Path) -> None:
    file = tmp_path / "old.json"
    file.write_text(
        json.dumps(
            {
                "schema": 0,
                "name": "old one",
                "description": "from 0.x",
                "settings": {
                    "detector_model": "scrfd",
                    "face_detector_score": 0.7,
                    "face_swapper_model": "classic",
                    "face_enhancer_model": "gpen_bfr_512",
                    "face_enhancer_blend": 40,
                    "color_transfer": "mkl",
                    "execution_providers": ["cpu"],
                    "selector_reference_distance": 0.9,
                    "output_video_quality": 70,
                },
            }
        )
    )
    loaded = presets.load(file)
    assert loaded.detector.model == "scrfd" and loaded.detector.score == 0.7
    assert loaded.face_swapper.model == "classic"
    assert loaded.face_enhancer.model == "gpen_bfr_512" and loaded.face_enhancer.blend == 40
    assert loaded.color.method == "mkl" and loaded.execution.providers == ("cpu",)
    assert loaded.selector.reference_distance == 0.9 and loaded.output.quality == 70
    assert loaded.mask == Settings().mask
    # importing rewrites it at the current schema
    path = presets.import_file(file)
    assert path.name == "old one.json"
    assert json.loads(path.read_text())["schema"] == SCHEMA_VERSION
    assert presets.load("old one") == loaded


def _schema_1(settings: Settings) -> dict[str, object]:
    """``settings`` as a schema 1 preset held them: the face swapper's and enhancer's sections under their
    old names ``swapper`` and ``enhancer``, version 1."""
    data = settings.model_dump(mode="json")
    data["swapper"], data["enhancer"] = data.pop("face_swapper"), data.pop("face_enhancer")
    return {"schema": 1, "name": "older", "description": "from 1.x", "settings": {**data, "version": 1}}


def test_a_schema_1_preset_loads_its_swapper_and_enhancer_under_their_new_names(tmp_path: Path) -> None:
    file = tmp_path / "older.json"
    file.write_text(json.dumps(_schema_1(_custom())))
    assert presets.load(file) == _custom()
    assert _custom().face_swapper.pixel_boost == 256 and _custom().face_enhancer.model == "codeformer"
    path = presets.import_file(file)  # importing rewrites it at the current schema, in the new names
    saved = json.loads(path.read_text())
    assert saved["schema"] == SCHEMA_VERSION == 2 and saved["settings"]["version"] == SCHEMA_VERSION
    assert saved["settings"]["face_swapper"]["model"] == "inswapper_128"
    assert "swapper" not in saved["settings"]
    assert presets.load("older") == _custom()


def test_a_preset_giving_a_section_under_both_names_is_refused_in_one_line(tmp_path: Path) -> None:
    doc = _schema_1(Settings())
    doc["settings"]["face_swapper"] = {"model": "classic"}  # type: ignore[index]
    file = tmp_path / "both.json"
    file.write_text(json.dumps(doc))
    with pytest.raises(SettingsError, match="both 'swapper' and 'face_swapper'"):
        presets.load(file)


def test_old_set_keys_still_set_the_renamed_sections() -> None:
    """``--set swapper.model=…`` (and ``enhancer.…``), as scripts and habits still write them."""
    got = apply_overrides(Settings(), ["swapper.model=classic", "swapper.pixel_boost=512",
                                       "enhancer.blend=30"])
    assert (got.face_swapper.model, got.face_swapper.pixel_boost, got.face_enhancer.blend) == (
        "classic", 512, 30)
    assert got == apply_overrides(Settings(), {"face_swapper.model": "classic",
                                               "face_swapper.pixel_boost": 512, "face_enhancer.blend": 30})
    with pytest.raises(SettingsError, match="unknown settings key 'face_swapper.colour'"):
        apply_overrides(Settings(), ["swapper.colour=1"])


def test_schema_0_unknown_flat_key(tmp_path: Path) -> None:
    file = tmp_path / "old.json"
    file.write_text(json.dumps({"schema": 0, "settings": {"face_warper_model": "x"}}))
    with pytest.raises(SettingsError, match="face_warper_model"):
        presets.load(file)


def test_newer_schema_refused(tmp_path: Path) -> None:
    file = tmp_path / "future.json"
    file.write_text(json.dumps({"schema": SCHEMA_VERSION + 1, "settings": {}}))
    with pytest.raises(SettingsError, match="newer"):
        presets.load(file)
    with pytest.raises(SettingsError, match="newer"):
        presets.import_file(file, name="future")
    assert _user_files() == []


def test_broken_files(tmp_path: Path) -> None:
    bad_json = tmp_path / "broken.json"
    bad_json.write_text("{not json")
    with pytest.raises(SettingsError, match="not valid JSON"):
        presets.load(bad_json)
    with pytest.raises(UserError, match="not found"):
        presets.load(tmp_path / "missing.json")
    extra = tmp_path / "extra.json"
    extra.write_text(json.dumps({"schema": 1, "settings": {}, "author": "me"}))
    with pytest.raises(SettingsError, match="author"):
        presets.load(extra)


def test_unreadable_user_file_is_skipped_in_listing() -> None:
    (paths.user_presets_dir() / "junk.json").write_text("[]")
    presets.save("good", Settings())
    names = {i.name for i in presets.list_presets()}
    assert "good" in names and names >= BUILTINS
