"""What to translate, in which order: the reference's source files and the module plan.

The reference module (the file defining the reference class) and the local modules it imports
(files under the same package directory, found by following imports) are the source. Helper
modules are translated first, in dependency order (a module after everything it imports), each
to ``translation/<name>.py`` with its own L1 tests; then the environment itself
(``translation/jax_env.py``: the reference module plus any ``--source`` context, e.g. the
Gymnasium environment an adapter wraps); then the bridge. L1 runs per module; L2 and L3 run on
the composition.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import inspect
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

DATA_SUFFIXES = (".json", ".csv", ".tsv", ".txt", ".yaml", ".yml", ".toml")
MAX_DATA_CHARS = 2_000_000  # a data file larger than this is not copied (named in TASK.md)


@dataclass
class SourceFile:
    name: str  # module name (or file name for a plain file)
    path: str  # where it was read from
    text: str
    role: str = "reference"  # reference | helper | context | data

    @property
    def lines(self) -> int:
        return self.text.count("\n") + 1

    @property
    def chars(self) -> int:
        return len(self.text)

    @property
    def stem(self) -> str:
        return self.name.rsplit(".", 1)[-1].removesuffix(".py")

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "lines": self.lines, "chars": self.chars}


@dataclass
class ModulePlan:
    name: str
    kind: str  # helper | env | bridge
    target: str  # file the agent writes
    sources: list[str] = field(default_factory=list)  # SourceFile names
    depends: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def _module_file(name: str) -> Path | None:
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.origin or not spec.origin.endswith(".py"):
        return None
    return Path(spec.origin)


def _imports(path: Path, module: str) -> list[str]:
    """Absolute names of the modules ``path`` imports (relative imports resolved)."""
    tree = ast.parse(path.read_text())
    package = module.rsplit(".", 1)[0] if "." in module else ""
    if path.name == "__init__.py":
        package = module
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                parent = ".".join(parts[: len(parts) - node.level + 1])
                base = f"{parent}.{base}" if base else parent
            out.append(base)
            out += [f"{base}.{a.name}" for a in node.names]  # `from pkg import module`
    return out


def local_modules(module: str) -> dict[str, list[str]]:
    """``module`` and the modules under its directory it imports, transitively:
    name -> the local modules it imports."""
    root_file = _module_file(module)
    if root_file is None:
        return {}
    root = root_file.parent
    graph: dict[str, list[str]] = {}
    todo = [module]
    while todo:
        name = todo.pop()
        if name in graph:
            continue
        path = _module_file(name)
        if path is None:
            continue
        deps = []
        for dep in _imports(path, name):
            dep_path = _module_file(dep)
            if (dep_path is not None and dep_path.is_relative_to(root) and dep != name
                    and dep_path.name != "__init__.py"):
                deps.append(dep)
        graph[name] = sorted(set(deps))
        todo += graph[name]
    return graph


def dependency_order(graph: dict[str, list[str]]) -> list[str]:
    """Every module after the modules it imports (ties in name order; cycles broken)."""
    order: list[str] = []
    state: dict[str, int] = {}

    def visit(n: str) -> None:
        if state.get(n) == 2:
            return
        if state.get(n) == 1:  # a cycle: keep going, the other member comes first
            return
        state[n] = 1
        for d in sorted(graph.get(n, [])):
            visit(d)
        state[n] = 2
        order.append(n)

    for n in sorted(graph):
        visit(n)
    return order


def data_files(modules: list[SourceFile]) -> list[SourceFile]:
    """Text data files the modules name in a string literal (``"cards.json"``,
    ``Path(__file__).parent / "table.csv"``) that lie in the directory of the module naming
    them: the facts a translation needs beside the code (a card table, a level map)."""
    found: dict[str, SourceFile] = {}
    for m in modules:
        path = Path(m.path)
        try:
            tree = ast.parse(m.text)
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Constant) and isinstance(node.value, str)):
                continue
            literal = node.value
            if "\n" in literal or not literal.endswith(DATA_SUFFIXES) or "/" in literal:
                continue
            candidate = path.parent / literal
            if candidate.is_file() and literal not in found \
                    and candidate.stat().st_size <= MAX_DATA_CHARS:
                found[literal] = SourceFile(literal, str(candidate), candidate.read_text(),
                                            "data")
    return list(found.values())


def reference_sources(reference: str, extra: list[str] | None = None) -> list[SourceFile]:
    """The reference module, its local helpers, the data files they read (``data_files``) and
    ``extra`` context (modules or files)."""
    module = reference.partition(":")[0]
    graph = local_modules(module)
    files = []
    for name in dependency_order(graph):
        path = _module_file(name)
        assert path is not None
        files.append(SourceFile(name, str(path), path.read_text(),
                                "reference" if name == module else "helper"))
    files += data_files(files)
    for item in extra or []:
        path = Path(item)
        if path.is_file():
            files.append(SourceFile(path.name, str(path), path.read_text(), "context"))
            continue
        try:
            mod = importlib.import_module(item)
            files.append(SourceFile(item, inspect.getfile(mod), inspect.getsource(mod),
                                    "context"))
        except (ImportError, OSError, TypeError) as e:
            raise FileNotFoundError(f"--source {item}: neither a file nor an importable "
                                    f"module ({e})") from e
    return files


def plan_modules(sources: list[SourceFile], package: str = "translation") -> list[ModulePlan]:
    helpers = [s for s in sources if s.role == "helper"]
    names = {s.name: s.stem for s in helpers}
    graph: dict[str, list[str]] = {s.name: [] for s in sources}
    for s in helpers:
        path = Path(s.path)
        if path.is_file():
            graph[s.name] = [d for d in _imports(path, s.name) if d in names]
    plan = [ModulePlan(s.stem, "helper", f"{package}/{s.stem}.py", [s.name],
                       [names[d] for d in graph[s.name]]) for s in helpers]
    plan.append(ModulePlan("jax_env", "env", f"{package}/jax_env.py",
                           [s.name for s in sources if s.role in ("reference", "context")],
                           [p.name for p in plan]))
    plan.append(ModulePlan("bridge", "bridge", f"{package}/bridge.py", [], ["jax_env"]))
    return plan
