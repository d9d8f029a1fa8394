"""The house rules, checked on the source itself (ast, nothing imported).

- no import cycle between the project's own modules (lazy imports inside functions count too);
- ``pipeline`` never imports ``webui``, ``cli`` or ``twins`` (the cost twins, built on the engine's
  catalog), not even by a string handed to importlib;
- ``webui`` reaches the engine only through ``pipeline.api`` (plus the shared vocabulary it re-exports);
- no module uses another module's ``_private`` name;
- no function or method is longer than 80 lines;
- only ``pipeline/env.py`` reads a ``FACESTATION_*`` environment variable (writes are fine);
- a test turns colour matching off (``color.method`` none) only where colour is what it tests;
- generic code (the engine, chain, render, checks, live, UI, CLI) never names a processor: it asks the
  registry (``pipeline.processors``).
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("pipeline", "webui", "cli", "twins")
MAX_FUNCTION_LINES = 80
MAX_CLASS_LINES = 300
NAME_DISPATCH_ALLOWED = {"pipeline/families.py", "pipeline/models/catalog.py"}
ENV_READERS = ("get", "getenv")  # os.environ.get(NAME), os.getenv(NAME); setdefault and pop are writes


@dataclass
class Module:
    name: str
    path: Path
    tree: ast.Module
    is_package: bool
    imports: dict[str, int] = field(default_factory=dict)  # imported project module -> first line
    private_uses: list[str] = field(default_factory=list)


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _collect() -> dict[str, Module]:
    modules: dict[str, Module] = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
            name = _module_name(path)
            modules[name] = Module(name, path, tree, path.name == "__init__.py")
    for module in modules.values():
        _scan(module, modules)
    return modules


def _resolve(module: Module, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = module.name.split(".")
    if not module.is_package:
        base = base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _project(name: str, modules: dict[str, Module]) -> str | None:
    """The project module a dotted name lands in (the longest known prefix), or None."""
    parts = name.split(".")
    while parts:
        candidate = ".".join(parts)
        if candidate in modules:
            return candidate
        parts.pop()
    return None


def _scan(module: Module, modules: dict[str, Module]) -> None:
    aliases: dict[str, str] = {}  # local name -> project module it stands for
    for node in ast.walk(module.tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                target = _project(alias.name, modules)
                if target:
                    module.imports.setdefault(target, node.lineno)
                    top = alias.name.split(".")[0]
                    aliases[alias.asname or top] = alias.name if alias.asname else top
        elif isinstance(node, ast.ImportFrom):
            base = _resolve(module, node)
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                if sub in modules:
                    module.imports.setdefault(sub, node.lineno)
                    aliases[alias.asname or alias.name] = sub
                    continue
                target = _project(base, modules)
                if target is None:
                    continue
                module.imports.setdefault(target, node.lineno)
                if _is_private(alias.name) and target != module.name:
                    module.private_uses.append(f"{module.name}:{node.lineno} imports {target}.{alias.name}")
    for node in ast.walk(module.tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and _is_private(node.attr):
            target = aliases.get(node.value.id)
            if target and target in modules and target != module.name:
                module.private_uses.append(f"{module.name}:{node.lineno} uses {target}.{node.attr}")


def _is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


@pytest.fixture(scope="module")
def modules() -> dict[str, Module]:
    return _collect()


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle as a path of module names, or None (iterative DFS, white/grey/black)."""
    state: dict[str, int] = dict.fromkeys(graph, 0)
    for start in sorted(graph):
        if state[start]:
            continue
        stack: list[tuple[str, list[str]]] = [(start, sorted(graph[start]))]
        path = [start]
        state[start] = 1
        while stack:
            node, todo = stack[-1]
            if not todo:
                state[node] = 2
                stack.pop()
                path.pop()
                continue
            nxt = todo.pop()
            if state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            if state.get(nxt, 2) == 0:
                state[nxt] = 1
                path.append(nxt)
                stack.append((nxt, sorted(graph[nxt])))
    return None


def _graph(modules: dict[str, Module]) -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for m in modules.values():
        # a module "importing" its own package's __init__ (for __version__ etc.) is not an edge back down
        graph[m.name] = {t for t in m.imports if t != m.name and not m.name.startswith(t + ".")}
    return graph


def test_cycle_finder_finds_a_cycle() -> None:
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set(), "c": {"a", "b"}}) is None


def test_no_import_cycle(modules: dict[str, Module]) -> None:
    assert len(modules) > 30  # the scan found the project
    cycle = _cycle(_graph(modules))
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def test_pipeline_never_imports_the_layers_above(modules: dict[str, Module]) -> None:
    above = re.compile(r"^(webui|cli|twins)(\.|$)")
    bad = []
    for m in modules.values():
        if not m.name.startswith("pipeline"):
            continue
        bad += [f"{m.name}:{line} imports {t}" for t, line in m.imports.items() if above.match(t)]
        for node in ast.walk(m.tree):  # also not by a string (importlib, __import__, entry points)
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and above.match(node.value) \
                    and re.fullmatch(r"[\w.]+", node.value) and "." in node.value:
                bad.append(f"{m.name}:{node.lineno} names module {node.value!r}")
    assert not bad, "\n".join(bad)


def test_webui_uses_only_the_public_engine_api(modules: dict[str, Module]) -> None:
    bad = [f"{m.name}:{line} imports {t}" for m in modules.values() if m.name.startswith("webui")
           for t, line in m.imports.items() if t.startswith("pipeline") and t != "pipeline.api"]
    assert not bad, "\n".join(bad)


def test_no_private_names_across_modules(modules: dict[str, Module]) -> None:
    bad = [use for m in modules.values() for use in m.private_uses]
    assert not bad, "\n".join(bad)


def test_functions_fit_on_a_screen(modules: dict[str, Module]) -> None:
    long = []
    for m in modules.values():
        for node in ast.walk(m.tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                lines = (node.end_lineno or node.lineno) - node.lineno + 1
                if lines > MAX_FUNCTION_LINES:
                    long.append(f"{m.path.relative_to(ROOT)}:{node.lineno} {node.name} is {lines} lines")
    assert not long, "\n".join(long)


def test_architecture_page_matches_the_tree() -> None:
    """Every file or folder ARCHITECTURE.md names exists, and every room of pipeline/ is on the page."""
    page = (ROOT / "ARCHITECTURE.md").read_text(encoding="utf-8")
    named = set(re.findall(r"`([\w/]+(?:\.py|/))", page)) | set(re.findall(r"([\w/]+\.py)\b", page))
    files = {p.name for package in (*PACKAGES, "tests", "scripts") for p in (ROOT / package).rglob("*.py")}
    bases = (ROOT, ROOT / "pipeline")
    missing = [n for n in sorted(named) if not n.startswith("/")  # `*/base.py` stands for every family's
               and not (n in files if "/" not in n else any((b / n).exists() for b in bases))]
    assert not missing, f"ARCHITECTURE.md names what is not there: {missing}"
    rooms = [p.name for p in (ROOT / "pipeline").iterdir()
             if (p.suffix == ".py" and p.name != "__init__.py")
             or (p.is_dir() and (p / "__init__.py").exists())]
    unnamed = [r for r in sorted(rooms) if (r if r.endswith(".py") else r + "/") not in page]
    assert not unnamed, f"pipeline rooms missing from ARCHITECTURE.md: {unnamed}"


def _is_environ(node: ast.expr) -> bool:
    return (isinstance(node, ast.Attribute) and node.attr == "environ") or \
        (isinstance(node, ast.Name) and node.id == "environ")


def _env_reads(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, key) of every read of the environment: ``os.environ.get(k)``, ``os.getenv(k)``,
    ``os.environ[k]`` (not as a target), ``k in os.environ``; key is the literal, or ``?`` if computed."""
    keys: list[tuple[int, ast.expr]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and node.args and isinstance(node.func, ast.Attribute) and (
                (node.func.attr == "get" and _is_environ(node.func.value))
                or (node.func.attr == "getenv" and isinstance(node.func.value, ast.Name))):
            keys.append((node.lineno, node.args[0]))
        elif isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load) and _is_environ(node.value):
            keys.append((node.lineno, node.slice))
        elif isinstance(node, ast.Compare) and any(_is_environ(c) for c in node.comparators):
            keys.append((node.lineno, node.left))
    return [(line, key.value if isinstance(key, ast.Constant) and isinstance(key.value, str) else "?")
            for line, key in keys]


def test_env_read_finder_finds_reads() -> None:
    source = "\n".join([
        "import os",
        "from os import environ",
        'os.environ.get("FACESTATION_DATA")',
        'os.getenv("FACESTATION_DEBUG")',
        'x = os.environ["FACESTATION_MODELS"]',
        'if "FACESTATION_CACHE" in environ: pass',
        "os.environ.get(name)",
        'os.environ["FACESTATION_DATA"] = "d"',  # writes are fine
        'os.environ.setdefault("FACESTATION_DATA", "d")',
        'os.environ.get("PYTHONPATH")',
    ])
    assert _env_reads(ast.parse(source)) == [(3, "FACESTATION_DATA"), (4, "FACESTATION_DEBUG"),
                                             (5, "FACESTATION_MODELS"), (6, "FACESTATION_CACHE"), (7, "?"),
                                             (10, "PYTHONPATH")]


def test_only_pipeline_env_reads_facestation_variables() -> None:
    """Every FACESTATION_* value is parsed by one rule (pipeline/env.py): elsewhere, read ``env.NAME.get()``.
    A read whose key is computed is refused too, since it could be one."""
    bad = []
    for folder in (*PACKAGES, "scripts", "tests"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            if path in (ROOT / "pipeline" / "env.py", ROOT / "tests" / "test_env.py"):  # the rule, its tests
                continue
            tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
            bad += [f"{path.relative_to(ROOT)}:{line} reads {key}" for line, key in _env_reads(tree)
                    if key == "?" or key.startswith("FACESTATION_")]
    assert not bad, "read these through pipeline.env:\n" + "\n".join(bad)


def test_classes_stay_small(modules: dict[str, Module]) -> None:
    long = []
    for m in modules.values():
        for node in ast.walk(m.tree):
            if isinstance(node, ast.ClassDef):
                lines = (node.end_lineno or node.lineno) - node.lineno + 1
                if lines > MAX_CLASS_LINES:
                    long.append(f"{m.path.relative_to(ROOT)}:{node.lineno} {node.name} is {lines} lines")
    assert not long, "\n".join(long)


def _strings(node: ast.AST) -> list[str]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        return [s for e in node.elts for s in _strings(e)]
    return []


def name_dispatch(tree: ast.AST, names: set[str]) -> list[tuple[int, str]]:
    """(line, what) for each comparison with a model name and each prefix/suffix test that fits one."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            for side in [node.left, *node.comparators]:
                hit = [s for s in _strings(side) if s in names]
                if hit:
                    found.append((node.lineno, f"compares with the model name {hit[0]!r}"))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr in ("startswith", "endswith"):
            for text in (s for a in node.args for s in _strings(a)):
                if len(text) >= 3 and any(n.startswith(text) or n.endswith(text) for n in names):
                    found.append((node.lineno, f"{node.func.attr}({text!r}) tests a model's name"))
    return found


def test_the_name_dispatch_finder_finds_them() -> None:
    names = {"inswapper_128", "classic"}
    tree = ast.parse("a = m.name.startswith('inswapper')\nif s.model == 'classic': pass\nb = x in ('y',)")
    assert [line for line, _ in name_dispatch(tree, names)] == [1, 2]


def test_no_model_is_told_apart_by_its_name_outside_the_registry(modules: dict[str, Module]) -> None:
    from pipeline import processors
    from pipeline.families import FAMILIES
    from pipeline.models.catalog import CATALOG

    names = set(CATALOG) | {n for n, f in (FAMILIES | processors.families()).items() if f.code_only}
    bad = [f"{m.path.relative_to(ROOT)}:{line} {what}" for m in modules.values()
           if str(m.path.relative_to(ROOT)) not in NAME_DISPATCH_ALLOWED
           for line, what in name_dispatch(m.tree, names)]
    assert not bad, "\n".join(bad)


# --- colour matching stays on in the tests of everything but colour -----------------------------------------

COLOUR_WORDS = ("colour", "color", "reinhard", "mkl", "histogram")
COLOUR_OFF = re.compile(r"color\.method\s*=\s*[\"']?none\b")


def _is_none(node: ast.AST | None) -> bool:
    return isinstance(node, ast.Constant) and node.value == "none"


def _turns_colour_off(node: ast.AST) -> bool:
    """Whether ``node`` sets ``color.method`` to none as a literal: an override string, a dict entry (flat
    ``"color.method"`` or the ``color`` section's ``method``), or ``ColorSettings(method="none")``."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return bool(COLOUR_OFF.search(node.value))
    if isinstance(node, ast.Dict):
        for key, value in zip(node.keys, node.values, strict=True):
            name = key.value if isinstance(key, ast.Constant) else None
            if name == "color.method" and _is_none(value):
                return True
            if name == "color" and isinstance(value, ast.Dict) and any(
                    isinstance(k, ast.Constant) and k.value == "method" and _is_none(v)
                    for k, v in zip(value.keys, value.values, strict=True)):
                return True
    callee = getattr(node, "func", None)
    if isinstance(node, ast.Call) and getattr(callee, "id", getattr(callee, "attr", "")) == "ColorSettings":
        return any(k.arg == "method" and _is_none(k.value) for k in node.keywords)
    return False


def _colour_off_outside_colour_tests(tree: ast.Module) -> list[tuple[int, str]]:
    """(line, where) of every place that turns colour off, unless inside a test (a top-level function, or a
    class's method, named test…) whose name says colour is what it is about; a module constant or a helper
    counts whatever its name (it turns colour off for every test that uses it)."""
    found: list[tuple[int, str]] = []

    def visit(node: ast.AST, owner: str) -> None:
        about_colour = owner.startswith("test") and any(w in owner.lower() for w in COLOUR_WORDS)
        if _turns_colour_off(node) and not about_colour:
            found.append((getattr(node, "lineno", 0), owner or "<module>"))
        for child in ast.iter_child_nodes(node):
            top = owner or (child.name if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef) else "")
            visit(child, top)

    for node in tree.body:
        named = node.name if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) else ""
        visit(node, named if not isinstance(node, ast.ClassDef) else "")
    return found


def test_the_colour_off_finder_finds_each_form() -> None:
    source = "\n".join([
        'FAST = ["selector.mode=one", "color.method=none"]',
        "def _colour_settings():",
        '    return {"color.method": "none"}',
        "def test_a_mask():",
        '    s = Settings.model_validate({"color": {"method": "none"}})',
        '    t = ColorSettings(method="none")',
        '    u = ["color.method = none", "color.method=mkl", {"color.method": "mkl"}]',
        "def test_colour_matching_off_shows_the_model_output():",
        '    s = ["color.method=none"]',
        "class TestMasks:",
        "    def test_reinhard_against_none(self):",
        '        s = ["color.method=none"]',
        "    def test_box(self):",
        '        s = ["color.method=none"]',
    ])
    assert _colour_off_outside_colour_tests(ast.parse(source)) == [
        (1, "<module>"), (3, "_colour_settings"), (5, "test_a_mask"), (6, "test_a_mask"), (7, "test_a_mask"),
        (14, "test_box")]


def test_colour_is_turned_off_only_by_tests_of_colour() -> None:
    """The default settings are what a creator gets, and colour matching is on by default: a test of any other
    feature judges it with colour on. A test may set ``color.method`` to none only when colour is what it
    tests, which its own name says: the test function's (or test method's) name contains colour, color,
    reinhard, mkl or histogram. A module constant or a helper that turns colour off is refused whatever its
    name (every test using it would judge with colour off). Found: a literal none for ``color.method`` (an
    override string, a dict entry, the ``color`` section's ``method``, ``ColorSettings(method="none")``)."""
    bad = []
    for path in sorted((ROOT / "tests").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        bad += [f"{path.relative_to(ROOT)}:{line} in {owner}" for line, owner in
                _colour_off_outside_colour_tests(tree)]
    assert not bad, "colour turned off outside a test of colour:\n" + "\n".join(bad)


# --- generic code never names a processor ---------------------------------------------------------------

# the modules that work for any processor: they ask the registry (pipeline/processors/__init__.py, the one
# module that names the folders: it imports each) and never name one; a folder stands for every module in it
GENERIC = ("pipeline/api.py", "pipeline/alpha.py", "pipeline/bench.py", "pipeline/chain.py",
           "pipeline/checks.py", "pipeline/families.py", "pipeline/plan.py", "pipeline/preview.py",
           "pipeline/provenance.py", "pipeline/overlay.py", "pipeline/render.py", "pipeline/renderplan.py",
           "pipeline/request.py",
           "pipeline/stages.py", "pipeline/still.py", "pipeline/thumbnails.py", "pipeline/process/",
           "pipeline/live/", "pipeline/jobs/", "pipeline/modelcheck/", "pipeline/checking/",
           "pipeline/processors/base.py", "pipeline/processors/crops.py",
           "webui/", "cli/")


def _docstrings(tree: ast.AST) -> set[int]:
    kinds = ast.Module | ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef
    return {id(n.body[0].value) for n in ast.walk(tree) if isinstance(n, kinds) and n.body
            and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}


def names_a_processor(tree: ast.AST, names: set[str], sections: set[str]) -> list[tuple[int, str]]:
    """(line, what) for each place ``tree`` names a processor: an identifier or attribute that is one
    (``settings.lip_syncer``), a string that holds one as a word, or one of their settings keys
    (``"face_swapper.model"``); a docstring may explain with them."""
    word = re.compile(r"(?<![\w.])(" + "|".join(sorted(names)) + r")(?!\w)"
                      r"|(?<![\w.])(" + "|".join(sorted(sections)) + r")\.\w")
    docs = _docstrings(tree)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs \
                and word.search(node.value):
            found.append((node.lineno, f"the string {node.value[:60]!r}"))
        elif isinstance(node, ast.Attribute) and node.attr in names | sections:
            found.append((node.lineno, f"the attribute .{node.attr}"))
        elif isinstance(node, ast.Name) and node.id in names:
            found.append((node.lineno, f"the name {node.id}"))
    return found


def test_the_processor_name_finder_finds_each_form() -> None:
    tree = ast.parse('"""lip_syncer: a docstring may name it"""\n'
                     'a = "lip_syncer" in order\nb = s.lip_syncer.weight\nc = f"{x} lip_syncer needs"\n'
                     'd = "face_enhancer.model=gfpgan"\ne = "the lip syncer"\nf = "an enhancer"\n'
                     'lip_syncer = 1\n')
    found = names_a_processor(tree, {"lip_syncer", "face_enhancer"}, {"lip_syncer", "face_enhancer"})
    assert sorted(line for line, _ in found) == [2, 3, 4, 5, 8]


def test_generic_code_never_names_a_processor() -> None:
    from pipeline.processors import PROCESSORS

    names = set(PROCESSORS)
    sections = {p.section for p in PROCESSORS.values()}
    bad = []
    for place in GENERIC:
        path = ROOT / place
        assert path.exists(), place
        for file in sorted(path.rglob("*.py")) if place.endswith("/") else [path]:
            tree = ast.parse(file.read_text(encoding="utf-8"))
            bad += [f"{file.relative_to(ROOT)}:{line} {what}" for line, what in names_a_processor(
                tree, names, sections)]
    assert not bad, "generic code names a processor (ask the registry instead):\n" + "\n".join(bad)


def test_the_registry_imports_every_processor_folder_and_every_judge() -> None:
    """The registry names its folders (explicit imports); a folder or a judge.py it leaves out fails here."""
    from pipeline.processors import PROCESSORS, judges

    folders = {p.parent.name for p in (ROOT / "pipeline" / "processors").glob("*/__init__.py")}
    assert set(PROCESSORS) == folders
    judged = {p.parent.name for p in (ROOT / "pipeline" / "processors").glob("*/judge.py")}
    by_folder = {f.__module__.split(".")[2] for f in judges().values()}
    assert judged == by_folder, (judged, by_folder)
