"""The house rules, checked on the source itself (ast, nothing imported).

- no import cycle between the project's own modules (lazy imports inside functions count too);
- ``pipeline`` never imports ``webui`` or ``cli``, not even by a string handed to importlib;
- ``webui`` reaches the engine only through ``pipeline.api`` (plus the shared vocabulary it re-exports);
- no module uses another module's ``_private`` name;
- no function or method is longer than 80 lines;
- only ``pipeline/env.py`` reads a ``FACESTATION_*`` environment variable (writes are fine).
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("pipeline", "webui", "cli")
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
    above = re.compile(r"^(webui|cli)(\.|$)")
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
    files = {p.name for package in PACKAGES for p in (ROOT / package).rglob("*.py")}
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
    from pipeline.families import CODE_ONLY
    from pipeline.models.catalog import CATALOG

    names = set(CATALOG) | set(CODE_ONLY)
    bad = [f"{m.path.relative_to(ROOT)}:{line} {what}" for m in modules.values()
           if str(m.path.relative_to(ROOT)) not in NAME_DISPATCH_ALLOWED
           for line, what in name_dispatch(m.tree, names)]
    assert not bad, "\n".join(bad)
