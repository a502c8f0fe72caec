"""Applying a mutant: its statement executed in its module, and every import-time copy of what
that statement binds made again, for the duration of a ``with`` block.

A module's top-level statements ran once, at import. Re-executing only the mutated one changes
the names it binds, but not what other statements computed from them then: a table copied with
``jnp.asarray(C.TABLE)``, a tuple of functions bound at import, a function imported by name
into another of the translation's modules. Those copies would keep the original, and a mutant
reached only through them would look equivalent. So :func:`applied` also re-executes, in
source order, every later top-level statement that reads at execution time a name the mutant
changed, transitively, in the mutated module and in the other modules of the translation
(``modules``: the mutation plan's), including ``from m import NAME`` and ``M.NAME`` through a
module alias. A statement that changes an object in place (``T[i] = v``, ``T.append(v)``) has
the statement that made the object executed again first, so no original object is written to.
Only the translation's modules are followed: a reference that imports from them keeps the
original. Every other object stays the same one (the bridge keeps working with the same state
classes); function bodies look their globals up at call time and need nothing.
"""

from __future__ import annotations
import __future__

import ast
import contextlib
import functools
import importlib.util
import inspect
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from envport.verify.mutation.generate import MutantSource


@dataclass(frozen=True)
class _Statement:
    node: ast.stmt
    binds: frozenset[str]  # names the statement (re)binds at top level
    in_place: frozenset[str]  # names of objects it changes without rebinding them
    reads: frozenset[str]  # names it reads when executed (not inside function bodies)
    attributes: frozenset[tuple[str, str]]  # ``name.attr`` it reads when executed
    imports: tuple[tuple[str, tuple[str, ...]], ...]  # ``from module import names``


def _targets(node: ast.AST) -> tuple[set[str], set[str]]:
    """(names bound, names changed in place) by an assignment target."""
    if isinstance(node, ast.Name):
        return {node.id}, set()
    if isinstance(node, (ast.Tuple, ast.List)):
        bound: set[str] = set()
        changed: set[str] = set()
        for e in node.elts:
            b, c = _targets(e)
            bound |= b
            changed |= c
        return bound, changed
    if isinstance(node, ast.Starred):
        return _targets(node.value)
    root = node
    while isinstance(root, (ast.Attribute, ast.Subscript)):
        root = root.value
    return set(), ({root.id} if isinstance(root, ast.Name) else set())


class _Reads(ast.NodeVisitor):
    """Names and ``name.attr`` read when a statement executes: a ``def`` evaluates only its
    decorators and defaults (and annotations without ``from __future__ import annotations``),
    a ``lambda`` nothing; a class body runs."""

    def __init__(self, annotations: bool) -> None:
        self.names: set[str] = set()
        self.attributes: set[tuple[str, str]] = set()
        self.annotations = annotations

    def visit_Name(self, node: ast.Name) -> None:
        if isinstance(node.ctx, ast.Load):
            self.names.add(node.id)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if isinstance(node.value, ast.Name) and isinstance(node.ctx, ast.Load):
            self.attributes.add((node.value.id, node.attr))
        else:
            self.generic_visit(node)

    def _function(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        for d in node.decorator_list:
            self.visit(d)
        for d in [*node.args.defaults, *[k for k in node.args.kw_defaults if k is not None]]:
            self.visit(d)
        if self.annotations:
            for a in [*node.args.args, *node.args.kwonlyargs, *node.args.posonlyargs]:
                if a.annotation is not None:
                    self.visit(a.annotation)
            if node.returns is not None:
                self.visit(node.returns)

    visit_FunctionDef = _function
    visit_AsyncFunctionDef = _function

    def visit_Lambda(self, node: ast.Lambda) -> None:
        for d in [*node.args.defaults, *[k for k in node.args.kw_defaults if k is not None]]:
            self.visit(d)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        if isinstance(node.target, ast.Name):  # ``X += 1`` reads X (its target is a Store)
            self.names.add(node.target.id)
        self.generic_visit(node)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        if self.annotations:
            self.visit(node.annotation)
        if node.value is not None:
            self.visit(node.value)
        self.visit(node.target)


def _statement(node: ast.stmt, package: str | None, annotations: bool) -> _Statement:
    bound: set[str] = set()
    changed: set[str] = set()
    imports: list[tuple[str, tuple[str, ...]]] = []
    for n in ast.walk(node) if isinstance(node, (ast.If, ast.Try, ast.With, ast.For)) else [node]:
        if isinstance(n, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete)):
            for t in (n.targets if isinstance(n, (ast.Assign, ast.Delete)) else [n.target]):
                b, c = _targets(t)
                bound |= b
                changed |= c
            if isinstance(n, ast.AugAssign):
                changed |= bound & _targets(n.target)[0]
        elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(n.name)
        elif isinstance(n, ast.Import):
            bound |= {(a.asname or a.name).split(".")[0] for a in n.names}
        elif isinstance(n, ast.ImportFrom):
            bound |= {a.asname or a.name for a in n.names}
            try:
                name = importlib.util.resolve_name("." * n.level + (n.module or ""), package)
            except (ImportError, ValueError):
                continue
            imports.append((name, tuple(a.name for a in n.names)))
        elif isinstance(n, (ast.For, ast.With)):
            for t in ([n.target] if isinstance(n, ast.For) else
                      [i.optional_vars for i in n.items if i.optional_vars is not None]):
                b, c = _targets(t)
                bound |= b
                changed |= c
        elif isinstance(n, ast.Expr) and isinstance(n.value, ast.Call):
            changed |= _targets(n.value.func)[1]  # T.append(v), T.update(...)
    reads = _Reads(annotations)
    reads.visit(node)
    return _Statement(node, frozenset(bound), frozenset(changed), frozenset(reads.names),
                      frozenset(reads.attributes), tuple(imports))


@functools.lru_cache(maxsize=64)
def _statements(source: str, package: str | None, annotations: bool
                ) -> tuple[_Statement, ...]:
    return tuple(_statement(s, package, annotations) for s in ast.parse(source).body)


def _has_future_annotations(module: Any) -> bool:
    return getattr(module, "annotations", None) is __future__.annotations


def _source(module: Any) -> str:
    return Path(inspect.getfile(module)).read_text()  # what the mutants were generated from


def _analysis(module: Any) -> tuple[_Statement, ...]:
    return _statements(_source(module), module.__package__,
                       not _has_future_annotations(module))


def _changed(stmts: Sequence[_Statement], run: set[int], before: int | None = None,
             modules: frozenset[str] = frozenset()) -> set[str]:
    """What the statements ``run`` (those before ``before``) change; a name of a module
    (``np``, ``jax``: ``jax.config.update(...)`` changes nothing a copy was made of) excluded."""
    out: set[str] = set()
    for k in run:
        if before is None or k < before:
            out |= stmts[k].binds | stmts[k].in_place
    return out - modules


def plan(module: Any, ms: MutantSource, modules: Sequence[Any] = ()
         ) -> dict[str, list[int]]:
    """The top-level statements to execute, per module name, in source order: the mutated one
    (its index in its module) and every import-time copy of what changes (the module
    docstring). A fixed point over the translation's modules."""
    mods = {m.__name__: m for m in [module, *modules]}
    stmts = {name: list(_analysis(m)) for name, m in mods.items()}
    i = ms.mutant.statement
    stmts[module.__name__][i] = _statement(ast.parse(ms.statement_code).body[0],
                                           module.__package__,
                                           not _has_future_annotations(module))
    aliases = {name: {k: v.__name__ for k, v in vars(m).items()
                      if inspect.ismodule(v) and v.__name__ in mods}
               for name, m in mods.items()}
    module_names = {name: frozenset(k for k, v in vars(m).items() if inspect.ismodule(v))
                    for name, m in mods.items()}
    run: dict[str, set[int]] = {name: set() for name in mods}
    run[module.__name__].add(i)
    grew = True
    while grew:
        grew = False
        dirty = {name: _changed(stmts[name], run[name], modules=module_names[name])
                 for name in mods}
        for name in mods:
            ss, own = stmts[name], module_names[name]
            for j, s in enumerate(ss):
                if j in run[name]:
                    continue
                hit = bool(s.reads & _changed(ss, run[name], before=j, modules=own))
                for alias, other in aliases[name].items():
                    if dirty[other] and (alias in s.reads or any(
                            a == alias and attr in dirty[other] for a, attr in s.attributes)):
                        hit = True
                hit = hit or any(src in dirty and dirty[src] & set(names)
                                 for src, names in s.imports)
                if hit:
                    run[name].add(j)
                    grew = True
            for j in sorted(run[name]):  # the maker of an object changed in place runs too
                for n in ss[j].in_place - own - _changed(ss, run[name], before=j):
                    makers = [k for k in range(j) if n in ss[k].binds]
                    if makers and makers[-1] not in run[name]:
                        run[name].add(makers[-1])
                        grew = True
    return {name: sorted(run[name]) for name in _import_order(mods, stmts) if run[name]}


def _import_order(mods: dict[str, Any], stmts: dict[str, list[_Statement]]) -> list[str]:
    """The modules, each after those it imports from at top level (cycles: as given)."""
    deps = {name: {src for s in stmts[name] for src, _ in s.imports if src in mods}
            | {v.__name__ for v in vars(m).values()
               if inspect.ismodule(v) and v.__name__ in mods and v.__name__ != name}
            for name, m in mods.items()}
    order: list[str] = []
    visiting: set[str] = set()

    def visit(name: str) -> None:
        if name in order or name in visiting:
            return
        visiting.add(name)
        for d in sorted(deps[name]):
            visit(d)
        visiting.discard(name)
        order.append(name)

    for name in mods:
        visit(name)
    return order


@contextlib.contextmanager
def applied(module: Any, ms: MutantSource, modules: Sequence[Any] = ()
            ) -> Iterator[list[Any]]:
    """``ms`` applied to ``module`` (and its import-time copies in ``module`` and ``modules``,
    :func:`plan`) inside the block; the block gets the objects the mutant put in the modules.
    Afterwards every module's namespace is as before."""
    mods = {m.__name__: m for m in [module, *modules]}
    saved = {name: dict(vars(m)) for name, m in mods.items()}
    try:
        mutated = ast.parse(ms.statement_code).body[0]
        for name, indices in plan(module, ms, modules).items():
            m, stmts = mods[name], _analysis(mods[name])  # parsed once per source (cached)
            body = [mutated if m is module and k == ms.mutant.statement else stmts[k].node
                    for k in indices]
            flags = __future__.annotations.compiler_flag if _has_future_annotations(m) else 0
            code = compile(ast.Module(body=body, type_ignores=[]), inspect.getfile(m), "exec",
                           flags=flags, dont_inherit=True)
            exec(code, vars(m))
        yield [v for name, m in mods.items() for k, v in vars(m).items()
               if saved[name].get(k) is not v]
    finally:
        for name, m in mods.items():
            for k in list(vars(m)):
                if k not in saved[name]:
                    delattr(m, k)
            for k, v in saved[name].items():
                setattr(m, k, v)
