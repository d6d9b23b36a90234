"""The import graph of ``cockpit/`` keeps its shape: floors that import only downward, no cycle.

Read from the source (every ``import`` and ``from … import``, at module level or inside a function;
those under ``if TYPE_CHECKING:`` are left out: they never run).  Importing ``a.b.c`` also runs the
``__init__`` of each package on the way that the importer is not inside, so those count too.  The floors, bottom up:

    cockpit.core.config  <  cockpit.core  <  cockpit.demo  <  cockpit.ui  <  cockpit.cli

A module may import its own floor and those below it, never one above.  The config is the
bottom floor: outside itself it may use only a few small modules of the core that stand on
nothing (the layer names, path checks, pattern checks, the action and key tables).  A package's
``__init__`` is its face for those outside: a module inside never imports its own package's face
(that is how a facade turns into a cycle).  The demo's training project (``cockpit/demo/project``,
``cockpit/demo/fix``) is the user's code, not cockpit's, and is left out.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import pytest

import cockpit

ROOT = Path(cockpit.__file__).parent
FLOORS = ("cockpit.core.config", "cockpit.core", "cockpit.demo", "cockpit.ui", "cockpit.cli")
#: what the config may use of the core outside itself: modules that import no config
CONFIG_MAY_USE = frozenset({
    "cockpit.core.layers", "cockpit.core.paths", "cockpit.core.redact",
    "cockpit.core.probes.signatures", "cockpit.core.user_template", "cockpit.core.action_table", "cockpit.core.keymap",
    "cockpit.core.lazyface",
})


def _name(path: Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, Path]:
    skip = (ROOT / "demo" / "project", ROOT / "demo" / "fix")
    return {_name(p): p for p in ROOT.rglob("*.py") if not any(p.is_relative_to(s) for s in skip)}


MODULES = _modules()


def _lazy_face(name: str, path: Path) -> dict[str, str]:
    """A package face's ``_LAZY`` table (name → the module it loads the name from), else {}."""
    if path.name != "__init__.py":
        return {}
    for node in ast.parse(path.read_text()).body:
        target = node.target if isinstance(node, ast.AnnAssign) else (node.targets[0] if isinstance(node, ast.Assign) else None)
        if isinstance(target, ast.Name) and target.id == "_LAZY" and isinstance(node.value, ast.Dict):
            out = {}
            for k, v in zip(node.value.keys, node.value.values, strict=True):
                rel = ast.literal_eval(v)[0]
                level = len(rel) - len(rel.lstrip("."))
                base = name.split(".")[: len(name.split(".")) - level + 1]
                out[ast.literal_eval(k)] = ".".join([*base, rel.lstrip(".")] if rel.lstrip(".") else base)
            return out
    return {}


LAZY_FACES = {name: table for name, path in MODULES.items() if (table := _lazy_face(name, path))}


def _imports(name: str, path: Path) -> set[str]:
    """The cockpit modules ``name`` imports when it runs (TYPE_CHECKING blocks left out)."""
    tree = ast.parse(path.read_text())
    typing_only = {id(n) for block in ast.walk(tree)
                   if isinstance(block, ast.If) and "TYPE_CHECKING" in ast.unparse(block.test)
                   for n in ast.walk(block)}
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    out: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            mod = ".".join([*base, node.module] if node.module else base)
            subs = [f"{mod}.{a.name}" for a in node.names if f"{mod}.{a.name}" in MODULES]
            # ``from . import sibling`` names a module, not the package's face; a name of a lazy
            # face (a package whose ``_LAZY`` table loads each name on first use) is its module
            lazy = LAZY_FACES.get(mod, {})
            names = [a.name for a in node.names if f"{mod}.{a.name}" not in MODULES]
            targets = subs + [lazy[n] for n in names if n in lazy] + ([mod] if any(n not in lazy for n in names) else [])
        for t in targets:
            while t not in MODULES and "." in t:
                t = t.rsplit(".", 1)[0]
            if t in MODULES and t != name and t.startswith("cockpit"):
                out.add(t)
                out |= _faces_on_the_way(name, t)
    return out


def _faces_on_the_way(name: str, target: str) -> set[str]:
    """Importing ``a.b.c`` runs ``a/__init__`` and ``a/b/__init__`` first: the packages on the way
    that the importer is not inside itself (its own are running already) are imported too."""
    parts = target.split(".")
    return {pkg for pkg in (".".join(parts[:i]) for i in range(2, len(parts)))
            if pkg in MODULES and not (name == pkg or name.startswith(pkg + "."))}


@functools.cache
def _graph() -> dict[str, set[str]]:
    """Each module's imports: read when a test first asks (parsing every module costs seconds of
    CPU, which each worker that only collects this file would pay at import time)."""
    return {name: _imports(name, path) for name, path in MODULES.items()}


def _closure(start: frozenset[str]) -> frozenset[str]:
    seen, todo = set(start), list(start)
    while todo:
        for b in _graph().get(todo.pop(), ()):
            if b not in seen:
                seen.add(b)
                todo.append(b)
    return frozenset(seen)


#: the ground the config stands on: its leaf modules and what they import, and the packages whose
#: face imports nothing when it runs (a lazy face: importing a leaf inside runs only that); on the
#: config's floor
@functools.cache
def _ground() -> frozenset[str]:
    leaves = _closure(CONFIG_MAY_USE)
    return leaves | {name for name, path in MODULES.items() if path.name == "__init__.py" and _graph()[name] <= leaves}


def _floor(name: str) -> int:
    if name in _ground():
        return 0
    for i, prefix in enumerate(FLOORS):
        if name == prefix or name.startswith(prefix + "."):
            return i
    return -1  # the package root (its version): anyone may import it


def _cycles() -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    graph = _graph()
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on.add(start)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return out


def test_the_graph_is_read() -> None:
    assert LAZY_FACES["cockpit.core.journal"]["Journal"] == "cockpit.core.journal.store"
    graph = _graph()
    assert "cockpit.core.engine" in graph and "cockpit.ui.app" in graph and "cockpit.cli.main" in graph
    assert "cockpit.core.config" in graph["cockpit.core.engine"]  # a known edge: the reader sees relative imports
    assert len(graph) > 150


def test_no_import_cycle() -> None:
    cycles = _cycles()
    assert not cycles, "import cycles (each a set of modules that reach each other):\n" + "\n".join(
        f"  {len(c)}: " + ", ".join(c) for c in cycles)


def test_no_upward_import() -> None:
    up = sorted(f"{a} -> {b}" for a, deps in _graph().items() for b in deps if _floor(b) > _floor(a) >= 0)
    assert not up, "imports that reach a higher floor (" + " < ".join(FLOORS) + "):\n  " + "\n  ".join(up)


def test_the_config_is_the_floor() -> None:
    out = sorted(f"{a} -> {b}" for a, deps in _graph().items() if _floor(a) == 0
                 for b in deps if _floor(b) != 0 and b != "cockpit" and b not in CONFIG_MAY_USE)
    assert not out, "the config uses more of the core than its leaf modules:\n  " + "\n  ".join(out)
    for leaf in _ground():  # and those stand on nothing of the config itself
        assert not [b for b in _graph()[leaf] if b.startswith("cockpit.core.config")], leaf


def test_no_module_imports_its_own_package_face() -> None:
    bad = sorted(f"{a} -> {b}" for a, deps in _graph().items() for b in deps
                 if b != "cockpit" and a.startswith(b + ".") and (ROOT.parent / b.replace(".", "/") / "__init__.py").exists())
    assert not bad, "modules importing their own package's __init__ (import the sibling module instead):\n  " + "\n  ".join(bad)


@pytest.mark.parametrize("floor", ["cockpit.core", "cockpit.core.config"])
def test_core_never_reaches_the_front_ends(floor: str) -> None:
    """Stated on its own, for the reader: nothing in the core names the UI, the CLI or the demo."""
    reach = sorted(f"{a} -> {b}" for a, deps in _graph().items() if a == floor or a.startswith(floor + ".")
                   for b in deps if _floor(b) >= FLOORS.index("cockpit.demo"))
    assert not reach, reach
