"""Mutation scoring: verify the verifier.

Known bugs are seeded into a translation automatically (AST rewrites of its source: arithmetic
and comparison operator swaps, constant perturbations, dropped state updates, swapped arguments
and fields, swapped functions, removed negations) and the hierarchy runs on each mutant, lowest
layer first, with small sizes. A mutant is *killed* by the first layer that fails on it; a
*survivor* passes every layer. A mutant is *equivalent* when it provably computes the same thing
as the original: every traced entry point (reset, step, transition, sample_draws) has the same
jaxpr and the Python-level parts (spaces, params, flags) are equal, so no test can ever kill it
(typically the mutated code is unreachable under the default params, or is only evaluated at
trace time to the same value). Equivalent mutants are excluded from the kill rate.

Each mutant runs in a worker process (fresh JAX state; a mutant that hangs or crashes the
interpreter cannot take the run down), ``workers`` at a time, each worker taking a chunk of
mutants so the JAX import is paid once per chunk. ``envport mutate ENV --json out.json``.
"""

from __future__ import annotations
import __future__

import argparse
import ast
import contextlib
import copy
import dataclasses
import importlib
import inspect
import json
import os
import random
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

LAYER_ORDER = ("property", "interaction", "rollout", "distribution")

OPERATORS = {
    "arith": "arithmetic operator swap (+ -, * /, // /, % //, ** *, << >>, & | ^)",
    "compare": "comparison swap (< <=, > >=, == !=, and < > reversed)",
    "constant": "constant perturbation (int +1, float *1.1 or 0 -> 1, bool flipped)",
    "drop_update": "dropped state update (a new-state field keeps its old value)",
    "swap_args": "swapped arguments / fields (adjacent positional or keyword arguments)",
    "function": "swapped function (minimum/maximum, sin/cos, floor/ceil, any/all, min/max)",
    "negation": "removed negation (-x -> x, ~x -> x, not x -> x)",
}

_ARITH: dict[type[ast.AST], type[ast.AST]] = {
    ast.Add: ast.Sub, ast.Sub: ast.Add, ast.Mult: ast.Div, ast.Div: ast.Mult,
    ast.FloorDiv: ast.Div, ast.Mod: ast.FloorDiv, ast.Pow: ast.Mult,
    ast.LShift: ast.RShift, ast.RShift: ast.LShift,
    ast.BitAnd: ast.BitOr, ast.BitOr: ast.BitAnd, ast.BitXor: ast.BitOr,
}
# Boundary swaps (the subtle ones) and one reversal per comparison.
_COMPARE: dict[type[ast.AST], tuple[type[ast.AST], ...]] = {
    ast.Lt: (ast.LtE, ast.Gt), ast.LtE: (ast.Lt,), ast.Gt: (ast.GtE, ast.Lt),
    ast.GtE: (ast.Gt,), ast.Eq: (ast.NotEq,), ast.NotEq: (ast.Eq,),
}
_FUNCTIONS = {
    "minimum": "maximum", "maximum": "minimum", "min": "max", "max": "min", "sin": "cos",
    "cos": "sin", "floor": "ceil", "ceil": "floor", "any": "all", "all": "any",
    "logical_and": "logical_or", "logical_or": "logical_and",
}
_SYMBOL: dict[type[ast.AST], str] = {
    ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//", ast.Mod: "%",
    ast.Pow: "**", ast.LShift: "<<", ast.RShift: ">>", ast.BitAnd: "&", ast.BitOr: "|",
    ast.BitXor: "^", ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==",
    ast.NotEq: "!=",
}
# Methods whose code never runs during verification of the default configuration and that are
# not part of what a translation computes.
_SKIP_FUNCTIONS = {"__repr__", "__str__", "__hash__"}


@dataclass
class Mutant:
    id: str
    operator: str
    line: int
    original: str  # the source segment that was changed
    mutated: str  # what it became
    top_level: str  # the top-level statement (def/class/assignment name) it lives in
    statement: int  # index of that statement in the module body
    description: str = ""
    source_line: str = ""  # the original source line, stripped (keys the known equivalents)

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


# ---------------------------------------------------------------- generating mutants
@dataclass
class _Site:
    operator: str
    node: ast.AST  # the node in the ORIGINAL tree
    make: Callable[[ast.AST], ast.AST]  # copy of node -> mutated node
    description: str


def _segment(source: str, node: ast.AST) -> str:
    text = ast.get_source_segment(source, node) or ast.unparse(node)
    return " ".join(text.split())


def _top_name(stmt: ast.stmt) -> str:
    if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return stmt.name
    if isinstance(stmt, ast.Assign | ast.AnnAssign):
        target = stmt.targets[0] if isinstance(stmt, ast.Assign) else stmt.target
        return ast.unparse(target)
    return f"<statement {stmt.lineno}>"


class _SiteFinder(ast.NodeVisitor):
    """Collects mutation sites in executable code (not annotations, docstrings or imports)."""

    def __init__(self, state_fields: dict[str, list[str]]):
        self.sites: list[_Site] = []
        self.state_fields = state_fields  # state class name -> field names, for dropped updates
        self.function_params: list[dict[str, str]] = []  # annotated params of enclosing defs

    # -- structure: skip what never executes as translation code
    def visit_Import(self, node: ast.Import) -> None:
        return

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        return

    def visit_Expr(self, node: ast.Expr) -> None:
        if isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            return  # docstring
        self.generic_visit(node)

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        if node.name in _SKIP_FUNCTIONS:
            return
        params = {a.arg: ast.unparse(a.annotation) for a in node.args.args + node.args.kwonlyargs
                  if a.annotation is not None}
        self.function_params.append(params)
        for default in node.args.defaults + [d for d in node.args.kw_defaults if d]:
            self.visit(default)
        for stmt in node.body:
            self.visit(stmt)
        self.function_params.pop()

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        if node.value is not None:  # the annotation itself is never evaluated
            self.visit(node.value)

    def visit_arg(self, node: ast.arg) -> None:
        return

    # -- mutation sites
    def add(self, operator: str, node: ast.AST, make: Callable[[ast.AST], ast.AST],
            description: str) -> None:
        self.sites.append(_Site(operator, node, make, description))

    def visit_BinOp(self, node: ast.BinOp) -> None:
        new = _ARITH.get(type(node.op))
        if new is not None:
            def make(n: ast.AST, new: type[ast.AST] = new) -> ast.AST:
                assert isinstance(n, ast.BinOp)
                n.op = new()  # type: ignore[assignment]
                return n
            self.add("arith", node, make, f"{_SYMBOL[type(node.op)]} -> {_SYMBOL[new]}")
        self.generic_visit(node)

    def visit_Compare(self, node: ast.Compare) -> None:
        for i, op in enumerate(node.ops):
            for new in _COMPARE.get(type(op), ()):
                def make(n: ast.AST, i: int = i, new: type[ast.AST] = new) -> ast.AST:
                    assert isinstance(n, ast.Compare)
                    n.ops[i] = new()  # type: ignore[call-overload]
                    return n
                self.add("compare", node, make, f"{_SYMBOL[type(op)]} -> {_SYMBOL[new]}")
        self.generic_visit(node)

    def visit_UnaryOp(self, node: ast.UnaryOp) -> None:
        if isinstance(node.op, ast.USub | ast.Invert | ast.Not):
            if isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant):
                # -3.0 is a constant: perturbing it is the constant operator's job
                self.generic_visit(node)
                return
            def operand(n: ast.AST) -> ast.AST:
                assert isinstance(n, ast.UnaryOp)
                return n.operand

            self.add("negation", node, operand, "negation removed")
        self.generic_visit(node)

    def visit_Constant(self, node: ast.Constant) -> None:
        v = node.value
        new: bool | int | float
        if isinstance(v, bool):
            new = not v
        elif isinstance(v, int):
            new = v + 1
        elif isinstance(v, float):
            new = v * 1.1 if v != 0 else 1.0
        else:
            return

        def constant(n: ast.AST, new: bool | int | float = new) -> ast.AST:
            return ast.Constant(new)

        self.add("constant", node, constant, f"{v!r} -> {new!r}" if isinstance(v, float)
                 else f"{v} -> {new}")

    def visit_Attribute(self, node: ast.Attribute) -> None:
        new = _FUNCTIONS.get(node.attr)
        if new is not None:
            def make(n: ast.AST, new: str = new) -> ast.AST:
                assert isinstance(n, ast.Attribute)
                n.attr = new
                return n
            self.add("function", node, make, f".{node.attr} -> .{new}")
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        if isinstance(func, ast.Name) and func.id in ("min", "max"):
            new = _FUNCTIONS[func.id]

            def make_fn(n: ast.AST, new: str = new) -> ast.AST:
                assert isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
                n.func.id = new
                return n
            self.add("function", node, make_fn, f"{func.id} -> {new}")
        self._swaps(node)
        self._dropped_updates(node)
        self.generic_visit(node)

    def _swaps(self, node: ast.Call) -> None:
        args = [a for a in node.args if not isinstance(a, ast.Starred)]
        if len(args) == len(node.args):
            for i in range(len(args) - 1):
                if (ast.dump(args[i]) == ast.dump(args[i + 1]) or not _value_like(args[i])
                        or not _value_like(args[i + 1])):
                    continue

                def make(n: ast.AST, i: int = i) -> ast.AST:
                    assert isinstance(n, ast.Call)
                    n.args[i], n.args[i + 1] = n.args[i + 1], n.args[i]
                    return n
                self.add("swap_args", node, make, f"arguments {i + 1} and {i + 2} swapped")
        kws = [k for k in node.keywords if k.arg is not None]
        for i in range(len(kws) - 1):
            if ast.dump(kws[i].value) == ast.dump(kws[i + 1].value):
                continue
            a, b = kws[i].arg, kws[i + 1].arg

            def make_kw(n: ast.AST, a: str | None = a, b: str | None = b) -> ast.AST:
                assert isinstance(n, ast.Call)
                ka = next(k for k in n.keywords if k.arg == a)
                kb = next(k for k in n.keywords if k.arg == b)
                ka.value, kb.value = kb.value, ka.value
                return n
            self.add("swap_args", node, make_kw, f"fields {a} and {b} swapped")

    def _dropped_updates(self, node: ast.Call) -> None:
        """A state constructor whose field keeps the previous state's value."""
        name = node.func.id if isinstance(node.func, ast.Name) else None
        if name not in self.state_fields:
            return
        old = next((p for params in reversed(self.function_params)
                    for p, ann in params.items() if ann == name), None)
        if old is None:
            return
        fields = self.state_fields[name]
        assigned: list[tuple[str, int | None, str | None]] = [
            (fields[i], i, None) for i in range(min(len(node.args), len(fields)))]
        assigned += [(k.arg, None, k.arg) for k in node.keywords if k.arg and k.arg in fields]
        for fname, pos, kw in assigned:
            value = node.args[pos] if pos is not None else next(
                k.value for k in node.keywords if k.arg == kw)
            keep = f"{old}.{fname}"
            if ast.unparse(value) == keep or isinstance(value, ast.Starred):
                continue

            def make(n: ast.AST, pos: int | None = pos, kw: str | None = kw,
                     keep: str = keep) -> ast.AST:
                assert isinstance(n, ast.Call)
                expr = ast.parse(keep, mode="eval").body
                if pos is not None:
                    n.args[pos] = expr
                else:
                    next(k for k in n.keywords if k.arg == kw).value = expr
                return n
            self.add("drop_update", node, make, f"{name}.{fname} keeps {keep}")


_DTYPE_NAMES = {"dtype", "float32", "float64", "int32", "int64", "uint32", "uint8", "bool_",
                "int8", "int16", "uint16", "float16", "bfloat16"}


def _value_like(node: ast.AST) -> bool:
    """An argument that holds a value of the computation, not a shape, dtype, key or literal
    container: swapping those only makes mutants that crash at once (trivially killed)."""
    if isinstance(node, ast.Tuple | ast.List | ast.Dict | ast.Set):
        return False
    if isinstance(node, ast.Constant) and not isinstance(node.value, int | float):
        return False
    if isinstance(node, ast.Name) and node.id in ("key", "rng_key"):
        return False
    text = ast.unparse(node)
    last = text.split("(")[0].split(".")[-1]
    return last not in _DTYPE_NAMES


def _state_classes(module: Any) -> dict[str, list[str]]:
    """Dataclasses of the module that look like state: their constructors are update sites."""
    out = {}
    for name, obj in vars(module).items():
        if (inspect.isclass(obj) and dataclasses.is_dataclass(obj)
                and getattr(obj, "__module__", None) == module.__name__
                and name.endswith("State")):
            out[name] = [f.name for f in dataclasses.fields(obj)]
    return out


def _node_path(tree: ast.AST, target: ast.AST) -> list[tuple[str, int | None]]:
    """Field path from ``tree`` to ``target`` so the same node can be found in a copy."""
    def walk(node: ast.AST, path: list[tuple[str, int | None]]
             ) -> list[tuple[str, int | None]] | None:
        if node is target:
            return path
        for name, value in ast.iter_fields(node):
            if isinstance(value, list):
                for i, item in enumerate(value):
                    if isinstance(item, ast.AST):
                        found = walk(item, [*path, (name, i)])
                        if found is not None:
                            return found
            elif isinstance(value, ast.AST):
                found = walk(value, [*path, (name, None)])
                if found is not None:
                    return found
        return None

    found = walk(tree, [])
    assert found is not None
    return found


def _replace_at(tree: ast.AST, path: list[tuple[str, int | None]],
                make: Callable[[ast.AST], ast.AST]) -> ast.AST:
    parent: Any = None
    node: Any = tree
    for name, index in path:
        parent, node = node, getattr(node, name)
        if index is not None:
            node = node[index]
    new = make(node)
    name, index = path[-1]
    if index is None:
        setattr(parent, name, new)
    else:
        getattr(parent, name)[index] = new
    return tree


@dataclass
class MutantSource:
    """Everything needed to rebuild a mutant in another process."""

    mutant: Mutant
    statement_code: str  # the mutated top-level statement, as source


def generate(module: Any, operators: tuple[str, ...] = tuple(OPERATORS)
             ) -> list[MutantSource]:
    """Every mutant of ``module``'s source, in source order, ids ``m001``..."""
    source = Path(inspect.getfile(module)).read_text()
    tree = ast.parse(source)
    finder = _SiteFinder(_state_classes(module))
    sites: list[tuple[int, _Site]] = []
    for index, stmt in enumerate(tree.body):
        finder.sites = []
        finder.visit(stmt)
        sites += [(index, s) for s in finder.sites if s.operator in operators]
    out = []
    for n, (index, site) in enumerate(sites, 1):
        stmt = tree.body[index]
        path = _node_path(stmt, site.node)
        stmt_copy = copy.deepcopy(stmt)
        mutated_stmt = _replace_at(stmt_copy, path, site.make) if path else site.make(stmt_copy)
        # the mutated node, found again in the copy to print it
        mutated_node: Any = mutated_stmt
        for name, i in path:
            mutated_node = getattr(mutated_node, name)
            if i is not None:
                mutated_node = mutated_node[i]
        ast.fix_missing_locations(mutated_stmt)
        original = _segment(source, site.node)
        mutated = " ".join(ast.unparse(mutated_node).split())
        if original == mutated or ast.unparse(mutated_node) == ast.unparse(site.node):
            continue
        out.append(MutantSource(
            Mutant(id=f"m{n:03d}", operator=site.operator, line=getattr(site.node, "lineno", 0),
                   original=original, mutated=mutated, top_level=_top_name(stmt),
                   statement=index, description=site.description,
                   source_line=source.splitlines()[getattr(site.node, "lineno", 1) - 1].strip()),
            ast.unparse(mutated_stmt)))
    return out


def sample(mutants: list[MutantSource], limit: int | None, seed: int = 0
           ) -> list[MutantSource]:
    """At most ``limit`` mutants, drawn evenly over operators (seeded), in source order."""
    if limit is None or len(mutants) <= limit:
        return mutants
    rng = random.Random(seed)
    by_op: dict[str, list[MutantSource]] = {}
    for m in mutants:
        by_op.setdefault(m.mutant.operator, []).append(m)
    for ms in by_op.values():
        rng.shuffle(ms)
    chosen: list[MutantSource] = []
    while len(chosen) < limit:  # round robin over operators
        for ms in by_op.values():
            if ms and len(chosen) < limit:
                chosen.append(ms.pop())
    order = {m.mutant.id: i for i, m in enumerate(mutants)}
    return sorted(chosen, key=lambda m: order[m.mutant.id])


# ---------------------------------------------------------------- running one mutant
@contextlib.contextmanager
def applied(module: Any, ms: MutantSource) -> Iterator[None]:
    """The mutated top-level statement executed in ``module``'s own namespace, then undone.

    Re-executing only that statement keeps every other object identical (the bridge keeps
    working with the same state classes), while every later lookup through the module (the
    spec's factories import from it at call time) sees the mutant.
    """
    names = dict(vars(module))
    try:
        # The module's own ``from __future__ import annotations`` applies to its statements.
        flags = __future__.annotations.compiler_flag if getattr(
            module, "annotations", None) is __future__.annotations else 0
        code = compile(ms.statement_code, inspect.getfile(module), "exec", flags=flags,
                       dont_inherit=True)
        exec(code, vars(module))
        yield
    finally:
        for k in list(vars(module)):
            if k not in names:
                delattr(module, k)
        for k, v in names.items():
            setattr(module, k, v)


def fingerprint(env: Any) -> dict[str, str]:
    """What an environment computes, as text: jaxprs of its traced entry points under default
    params, and the Python-level parts the verifier reads (spaces, flags)."""
    import jax
    import jax.numpy as jnp
    import numpy as np

    params = env.default_params()
    key = jax.random.key(0)
    # Params count through what the traced programs compute with them (a parameter no program
    # reads cannot change behaviour), not through their repr.
    out: dict[str, str] = {
        "autoresets": repr(getattr(env, "autoresets", None)),
        "observation_space": repr(env.observation_space(params)),
        "action_space": repr(env.action_space(params)),
    }

    def program(fn: Callable[..., Any], *args: Any) -> str:
        closed = jax.make_jaxpr(fn)(*args)
        # Captured array constants are not printed in the jaxpr: add their values.
        consts = [np.asarray(c).tolist() for c in closed.consts]
        return f"{closed.jaxpr}\nconsts={consts!r}"

    try:
        out["reset"] = program(lambda k: env.reset(k, params), key)
        state, _ = env.reset(key, params)
        space = env.action_space(params)
        action = jnp.zeros(space.shape, space.dtype)
        out["sample_draws"] = program(lambda k, s: env.sample_draws(k, s, params), key, state)
        draws = env.sample_draws(key, state, params)
        out["transition"] = program(lambda s, a, d: env.transition(s, a, d, params),
                                    state, action, draws)
        out["step"] = program(lambda k, s, a: env.step(k, s, a, params), key, state, action)
    except Exception as e:  # a mutant that cannot even be traced differs from the original
        out["error"] = f"{type(e).__name__}: {e}"
    return out


def _first_failure(report: Any) -> tuple[str, str] | None:
    for name in LAYER_ORDER:
        r = report.layers.get(name)
        if r is not None and not r.passed:
            f = r.failures[0] if r.failures else None
            return name, (f"{f.test_id}: {f.message}" if f else "failed")[:300]
    return None


def canonical_hlo(text: str) -> str:
    """Optimised HLO without names, source locations and metadata: two programs that compile
    to the same instructions compare equal."""
    keep = []
    for line in text.splitlines():
        s = line.strip()
        if not s.startswith(("%", "ROOT", "ENTRY", "}")):
            continue  # the module header and the file/function/location tables
        s = re.sub(r",? ?metadata=\{[^}]*\}", "", s)
        s = re.sub(r",? ?stack_frame_id=\d+", "", s)
        keep.append(s)
    names: dict[str, str] = {}

    def rename(m: re.Match[str]) -> str:
        return names.setdefault(m.group(0), f"%v{len(names)}")

    return "\n".join(re.sub(r"%[\w.\-]+", rename, s) for s in keep)


def compiled_programs(env: Any) -> dict[str, str]:
    """The canonical optimised XLA programs of reset, sample_draws and transition."""
    import jax
    import jax.numpy as jnp

    params = env.default_params()
    key = jax.random.key(0)
    state, _ = env.reset(key, params)
    space = env.action_space(params)
    action = jnp.zeros(space.shape, space.dtype)
    draws = env.sample_draws(key, state, params)

    def program(fn: Callable[..., Any], *args: Any) -> str:
        return canonical_hlo(jax.jit(fn).lower(*args).compile().as_text() or "")

    return {
        "reset": program(lambda k: env.reset(k, params), key),
        "sample_draws": program(lambda k, s: env.sample_draws(k, s, params), key, state),
        "transition": program(lambda s, a, d: env.transition(s, a, d, params), state, action,
                              draws),
    }


_BOUNDARY = {("<", "<="), ("<=", "<"), (">", ">="), (">=", ">")}
_PRIMITIVE = {"<": "lt", "<=": "le", ">": "gt", ">=": "ge"}


def float_boundary(env: Any, mutant: Mutant, path: str) -> bool:
    """Is ``mutant`` a strict/non-strict swap of a comparison whose operands are floats?

    Found in the original's jaxpr: the comparison equations traced from the mutated line (by
    source location) and their operand dtypes.
    """
    import jax
    import jax.numpy as jnp
    import numpy as np

    ops = tuple(x.strip() for x in mutant.description.split("->"))
    if mutant.operator != "compare" or ops not in _BOUNDARY:
        return False
    try:
        from jax._src import source_info_util

        params = env.default_params()
        key = jax.random.key(0)
        state, _ = env.reset(key, params)
        space = env.action_space(params)
        draws = env.sample_draws(key, state, params)
        jaxprs = [jax.make_jaxpr(lambda s, a, d: env.transition(s, a, d, params))(
            state, jnp.zeros(space.shape, space.dtype), draws).jaxpr,
            jax.make_jaxpr(lambda k: env.reset(k, params))(key).jaxpr]
    except Exception:
        return False
    found = []

    def nested(value: Any) -> Iterator[Any]:
        if hasattr(value, "eqns"):
            yield value
        elif hasattr(getattr(value, "jaxpr", None), "eqns"):
            yield value.jaxpr
        elif isinstance(value, tuple | list):
            for v in value:
                yield from nested(v)

    def walk(jaxpr: Any) -> None:
        for eqn in jaxpr.eqns:
            for p in eqn.params.values():
                for inner in nested(p):
                    walk(inner)
            if eqn.primitive.name != _PRIMITIVE[ops[0]]:
                continue
            frame = source_info_util.user_frame(eqn.source_info.traceback)
            if frame is None or frame.start_line != mutant.line or not frame.file_name.endswith(
                    Path(path).name):
                continue
            found.append(all(np.issubdtype(v.aval.dtype, np.floating) for v in eqn.invars
                             if hasattr(v, "aval")))

    for j in jaxprs:
        walk(j)
    return bool(found) and all(found)


PYTHON_LEVEL = ("autoresets", "observation_space", "action_space")


def explain_equivalence(spec: Any, env: Any, mutant: Mutant, path: str,
                        ref: dict[str, Any], boundary: bool) -> tuple[str, str]:
    """(kind, why) a surviving mutant is equivalent, or ("", "") when it cannot be shown.

    ``env`` is the mutant (applied); ``ref`` holds the original's compiled programs and
    fingerprint, and ``boundary`` whether the mutation is a float boundary swap, both found
    with the mutant not applied.
    """
    mine = fingerprint(env)
    if not all(mine.get(k) == ref["fingerprint"].get(k) for k in PYTHON_LEVEL):
        return "", ""  # a space or flag differs: observable outside the traced programs
    try:
        if compiled_programs(env) == ref["programs"]:
            return "compiled", (
                "same compiled program: XLA optimises reset, sample_draws and transition to "
                "instruction-for-instruction the same code as the original's (e.g. an "
                "out-of-range constant index that JAX clamps back, an operation folded away), "
                "so the two cannot behave differently")
    except Exception:
        pass
    if not spec.verification.tolerance.exact and boundary:
        return "boundary", (
            "float boundary: the mutant differs from the original only when the two float "
            "operands of this comparison are exactly equal. The translation is compared with "
            f"its reference within a tolerance ({spec.verification.tolerance}): at an exact tie "
            "of the translation's floats, the reference's own value lies within rounding of the "
            "threshold on either side, so neither version is more correct there and no test "
            "that respects the tolerance can tell them apart")
    function = mutant.original.split("(", 1)[0]
    name = function.rsplit(".", 1)[-1]
    if (mutant.operator == "swap_args" and mutant.description == "arguments 1 and 2 swapped"
            and function.rsplit(".", 1)[0] in ("jnp", "jax.numpy") and name in _COMMUTATIVE):
        return "commutative", (
            f"commutative arguments: {function}(a, b, ...) is symmetric in a and b "
            f"({_COMMUTATIVE[name]}), in value, dtype and shape, so swapping them changes "
            "nothing")
    known = spec.verification.equivalent_mutants
    table = known() if known is not None else {}
    return table.get((Path(path).name, mutant.source_line, mutant.description), ("", ""))


# jax.numpy functions whose first two arguments commute, and why.
_COMMUTATIVE = {
    "clip": "jnp.clip(x, lo, hi) is minimum(hi, maximum(lo, x)) and maximum commutes",
    "maximum": "maximum commutes", "minimum": "minimum commutes", "add": "addition commutes",
    "multiply": "multiplication commutes", "logical_and": "and commutes",
    "logical_or": "or commutes", "logical_xor": "xor commutes", "equal": "equality commutes",
    "not_equal": "inequality commutes", "bitwise_and": "and commutes",
    "bitwise_or": "or commutes", "bitwise_xor": "xor commutes",
}


def run_mutant(spec: Any, module: Any, ms: MutantSource, original: dict[str, str],
               sizes: dict[str, Any], seed: int,
               original_programs: Callable[[], dict[str, Any]] | None = None
               ) -> dict[str, Any]:
    """Apply one mutant and run the hierarchy on it, lowest layer first, until one kills it;
    a survivor is examined for equivalence."""
    from envport.verify.runner import verify

    t0 = time.perf_counter()
    result: dict[str, Any] = {**ms.mutant.to_json(), "killed_by": None, "detail": "",
                              "equivalent": False, "equivalence": ""}
    path = inspect.getfile(module)
    with applied(module, ms):
        try:
            env = spec.make()
        except Exception as e:
            result.update(killed_by="property", detail=f"construction fails: {e}"[:300])
            result["seconds"] = round(time.perf_counter() - t0, 2)
            return result
        mine = fingerprint(env)
        if "error" not in mine and mine == original:
            result.update(equivalent=True, equivalence_kind="program", equivalence=(
                "same program: the jaxprs of reset, sample_draws, transition and step under "
                "the default params, the spaces and flags are identical to the original's (the "
                "mutated code is unreachable in this configuration, is evaluated at trace time "
                "to the same value, or sets a parameter no program reads), so no test can tell "
                "them apart"))
            result["seconds"] = round(time.perf_counter() - t0, 2)
            return result
        for layer in LAYER_ORDER:
            try:
                report = verify(spec, (layer,), env=env, seed=seed, **sizes)
            except Exception as e:  # the verifier crashing on a mutant is a detection too
                result.update(killed_by=layer, detail=f"crash: {type(e).__name__}: {e}"[:300])
                break
            failure = _first_failure(report)
            if failure is not None:
                result.update(killed_by=failure[0], detail=failure[1])
                break
    if result["killed_by"] is None and original_programs is not None:
        # The original is examined with the mutant NOT applied: every environment looks its
        # module's functions up at call time, the original's included.
        ref = original_programs()
        boundary = float_boundary(ref["env"], ms.mutant, path)
        with applied(module, ms):
            kind, why = explain_equivalence(spec, spec.make(), ms.mutant, path, ref, boundary)
        if why:
            result.update(equivalent=True, equivalence=why, equivalence_kind=kind)
    result["seconds"] = round(time.perf_counter() - t0, 2)
    return result


def _own_path() -> str:
    """PYTHONPATH that makes a child process import this very envport (not another install)."""
    import envport

    root = str(Path(envport.__file__).resolve().parents[1])
    return os.pathsep.join([root, *filter(None, [os.environ.get("PYTHONPATH")])])


def _digest(module: Any) -> str:
    import hashlib

    return hashlib.sha256(Path(inspect.getfile(module)).read_bytes()).hexdigest()


def translation_module(spec: Any) -> Any:
    return importlib.import_module(type(spec.make()).__module__)


def _worker(task_file: str) -> int:
    """Worker process: mutants of one chunk, one JSON line per event on stdout."""
    import jax

    task = json.loads(Path(task_file).read_text())
    cache = task.get("jax_cache")
    if cache:  # unchanged functions (reset...) compile once for all mutants
        jax.config.update("jax_compilation_cache_dir", cache)
        jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.5)
    from envport.core.registry import spec as get_spec

    spec = get_spec(task["env"])
    module = importlib.import_module(task["module"])
    if _digest(module) != task["digest"]:  # the mutants were made from another version
        print(f"{inspect.getfile(module)} changed since its mutants were generated; rerun",
              file=sys.stderr)
        return 3
    original = fingerprint(spec.make())
    original_env = spec.make()
    programs: dict[str, Any] = {}

    def original_programs() -> dict[str, Any]:  # compiled once, and only if a mutant survives
        if not programs:  # (called with no mutant applied)
            programs.update(programs=compiled_programs(original_env), fingerprint=original,
                            env=original_env)
        return programs

    for item in task["mutants"]:
        ms = MutantSource(Mutant(**item["mutant"]), item["statement_code"])
        print(json.dumps({"event": "start", "id": ms.mutant.id}), flush=True)
        try:
            result = run_mutant(spec, module, ms, original, task["sizes"], task["seed"],
                                original_programs)
        except Exception as e:
            result = {**ms.mutant.to_json(), "killed_by": "property", "equivalent": False,
                      "equivalence": "", "detail": f"crash: {type(e).__name__}: {e}"[:300]}
            traceback.print_exc(file=sys.stderr)
        print(json.dumps({"event": "result", "result": result}), flush=True)
    return 0


# ---------------------------------------------------------------- the parallel run
@dataclass
class MutationReport:
    env: str
    source: str
    results: list[dict[str, Any]] = field(default_factory=list)
    generated: int = 0
    settings: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0

    @property
    def equivalent(self) -> list[dict[str, Any]]:
        return [r for r in self.results if r["equivalent"]]

    @property
    def killed(self) -> list[dict[str, Any]]:
        return [r for r in self.results if r["killed_by"]]

    @property
    def survivors(self) -> list[dict[str, Any]]:
        return [r for r in self.results if not r["killed_by"] and not r["equivalent"]]

    @property
    def kill_rate(self) -> float:
        """Killed / non-equivalent mutants."""
        live = len(self.results) - len(self.equivalent)
        return len(self.killed) / live if live else 1.0

    @property
    def kill_rate_strict(self) -> float:
        """The same, counting as equivalent only mutants equal on every input: those shown
        equal within the tolerance or on the reachable states only count as survivors."""
        loose = sum(1 for r in self.equivalent if r.get("equivalence_kind") in
                    ("boundary", "reachable"))
        live = len(self.results) - len(self.equivalent) + loose
        return len(self.killed) / live if live else 1.0

    def equivalent_by_kind(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for r in self.equivalent:
            kind = r.get("equivalence_kind", "program")
            out[kind] = out.get(kind, 0) + 1
        return out

    def by_layer(self) -> dict[str, int]:
        out = {layer: 0 for layer in (*LAYER_ORDER, "timeout")}
        for r in self.killed:
            out[r["killed_by"]] = out.get(r["killed_by"], 0) + 1
        return out

    def by_operator(self) -> dict[str, dict[str, int]]:
        out: dict[str, dict[str, int]] = {}
        for r in self.results:
            row = out.setdefault(r["operator"], {"mutants": 0, "killed": 0, "equivalent": 0,
                                                 "survived": 0})
            row["mutants"] += 1
            kind = "killed" if r["killed_by"] else "equivalent" if r["equivalent"] else "survived"
            row[kind] += 1
        return out

    def to_json(self) -> dict[str, Any]:
        keep = ("id", "operator", "line", "source_line", "original", "mutated", "description",
                "detail")
        return {
            "env": self.env,
            "source": self.source,
            "generated": self.generated,
            "mutants": len(self.results),
            "killed": len(self.killed),
            "equivalent": len(self.equivalent),
            "kill_rate": round(self.kill_rate, 4),
            "kill_rate_strict": round(self.kill_rate_strict, 4),
            "equivalent_by_kind": self.equivalent_by_kind(),
            "by_layer": self.by_layer(),
            "by_operator": self.by_operator(),
            "survivors": [{k: r.get(k) for k in keep} for r in self.survivors],
            "equivalent_mutants": [{**{k: r.get(k) for k in keep},
                                    "kind": r.get("equivalence_kind", "program"),
                                    "explanation": r["equivalence"]} for r in self.equivalent],
            "results": self.results,
            "settings": self.settings,
            "seconds": round(self.seconds, 1),
        }


Progress = Callable[[dict[str, Any], int, int], None]


def run_mutation(env_name: str, *, max_mutants: int | None = None, workers: int = 2,
                 operators: tuple[str, ...] = tuple(OPERATORS), seed: int = 0,
                 states: int = 1000, episodes: int = 4, examples: int = 4, samples: int = 10000,
                 chunk: int = 8, timeout_s: float = 300.0, progress: Progress | None = None,
                 only: list[str] | None = None) -> MutationReport:
    """Generate mutants of ``env_name``'s translation and run the hierarchy on each."""
    from envport.core.registry import spec as get_spec

    spec = get_spec(env_name)
    module = translation_module(spec)
    every = generate(module, operators)
    chosen = [m for m in every if m.mutant.id in only] if only else sample(every, max_mutants,
                                                                           seed)
    sizes = {"states": states, "episodes": episodes, "examples": examples, "samples": samples}
    report = MutationReport(env_name, inspect.getfile(module), generated=len(every),
                            settings={**sizes, "seed": seed, "workers": workers,
                                      "operators": list(operators), "max_mutants": max_mutants})
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="envport-mutate-") as tmp:
        pool = _Pool(env_name, module.__name__, sizes, seed, Path(tmp), workers, chunk,
                     timeout_s, _digest(module))
        for result in pool.run(chosen):
            report.results.append(result)
            if progress:
                progress(result, len(report.results), len(chosen))
    order = {m.mutant.id: i for i, m in enumerate(chosen)}
    report.results.sort(key=lambda r: order[r["id"]])
    report.seconds = time.perf_counter() - t0
    return report


class _Pool:
    """Worker processes over chunks of mutants; a mutant that runs past the timeout is recorded
    as killed by ``timeout`` (a hang is a detectable bug) and its worker is replaced."""

    def __init__(self, env: str, module: str, sizes: dict[str, int], seed: int, tmp: Path,
                 workers: int, chunk: int, timeout_s: float, digest: str):
        self.env, self.module, self.sizes, self.seed = env, module, sizes, seed
        self.digest = digest
        self.tmp, self.workers, self.chunk, self.timeout_s = tmp, workers, chunk, timeout_s
        self.jax_cache = str(tmp / "jax-cache")

    def _launch(self, batch: list[MutantSource], n: int) -> subprocess.Popen[str]:
        task = self.tmp / f"task-{n}.json"
        task.write_text(json.dumps({
            "env": self.env, "module": self.module, "sizes": self.sizes, "seed": self.seed,
            "jax_cache": self.jax_cache, "digest": self.digest,
            "mutants": [{"mutant": m.mutant.to_json(), "statement_code": m.statement_code}
                        for m in batch]}))
        env = {**os.environ, "PYTHONUNBUFFERED": "1", "PYTHONPATH": _own_path()}
        # One XLA thread pool per worker: the workers themselves are the parallelism.
        env.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false")
        with open(self.tmp / f"task-{n}.log", "w") as log:  # the child keeps its own handle
            return subprocess.Popen(
                [sys.executable, "-m", "envport.verify.mutate", "--worker", str(task)],
                stdout=subprocess.PIPE, stderr=log, stdin=subprocess.DEVNULL, text=True,
                env=env, start_new_session=True)

    def run(self, mutants: list[MutantSource]) -> Iterator[dict[str, Any]]:
        import queue

        pending = list(mutants)
        by_id = {m.mutant.id: m for m in mutants}
        events: queue.Queue[tuple[int, dict[str, Any] | None]] = queue.Queue()
        running: dict[int, dict[str, Any]] = {}
        launched = barren = 0

        def verdict(mid: str, killed_by: str, detail: str) -> dict[str, Any]:
            return {**by_id[mid].mutant.to_json(), "killed_by": killed_by, "detail": detail,
                    "equivalent": False, "equivalence": ""}

        def reader(n: int, proc: subprocess.Popen[str]) -> None:
            assert proc.stdout is not None
            for line in proc.stdout:
                with contextlib.suppress(json.JSONDecodeError):
                    events.put((n, json.loads(line)))
            proc.wait()
            events.put((n, None))

        def start() -> None:
            nonlocal launched
            # Chunks shrink at the end so the last mutants are shared by every worker.
            size = max(1, min(self.chunk, -(-len(pending) // self.workers)))
            batch, pending[:] = pending[:size], pending[size:]
            launched += 1
            proc = self._launch(batch, launched)
            running[launched] = {"proc": proc, "todo": [m.mutant.id for m in batch],
                                 "current": None, "since": time.monotonic(), "done": 0}
            threading.Thread(target=reader, args=(launched, proc), daemon=True).start()

        try:
            while pending or running:
                while pending and len(running) < self.workers:
                    start()
                try:
                    n, got = events.get(timeout=1.0)
                except queue.Empty:  # nothing said: look for a mutant past its time
                    for late in running.values():
                        if late["current"] and time.monotonic() - late["since"] > self.timeout_s:
                            with contextlib.suppress(ProcessLookupError):
                                os.killpg(late["proc"].pid, signal.SIGKILL)
                            mid, late["current"] = late["current"], None
                            late["todo"].remove(mid)
                            late["done"] += 1
                            yield verdict(mid, "timeout",
                                          f"no verdict within {self.timeout_s:.0f} s")
                    continue
                w = running.get(n)
                if w is None:
                    continue
                if got is None:  # the worker ended: requeue what it did not finish
                    del running[n]
                    left = list(w["todo"])
                    if w["current"] in left:  # it died on this one: the interpreter crashed
                        left.remove(w["current"])
                        w["done"] += 1
                        yield verdict(w["current"], "property",
                                      "the worker process died while verifying it (crash)")
                    barren = barren + 1 if w["done"] == 0 else 0
                    if barren >= 3:  # workers die before any mutant: a setup problem
                        log = (self.tmp / f"task-{n}.log").read_text()[-3000:]
                        raise RuntimeError(f"mutation workers fail to start:\n{log}")
                    pending[:0] = [by_id[i] for i in left]
                    continue
                if got["event"] == "start":
                    w["current"], w["since"] = got["id"], time.monotonic()
                elif got["event"] == "result":
                    result = got["result"]
                    if result["id"] in w["todo"]:
                        w["todo"].remove(result["id"])
                    w["current"] = None
                    w["done"] += 1
                    yield result
        finally:  # Ctrl-C or an error: no worker outlives the run
            for w in running.values():
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(w["proc"].pid, signal.SIGKILL)


# ---------------------------------------------------------------- command line
def render(report: MutationReport, console: Any = None) -> None:
    from rich.console import Console
    from rich.table import Table

    console = console or Console()
    data = report.to_json()
    t = Table(title=f"envport mutate {report.env}: {data['mutants']} mutants of "
                    f"{Path(report.source).name} ({report.generated} generated)")
    for col in ("layer", "killed"):
        t.add_column(col)
    for layer, n in data["by_layer"].items():
        t.add_row(layer, str(n))
    console.print(t)
    ops = Table(title="by operator")
    for col in ("operator", "mutants", "killed", "equivalent", "survived"):
        ops.add_column(col)
    for op, row in data["by_operator"].items():
        ops.add_row(op, *(str(row[k]) for k in ("mutants", "killed", "equivalent", "survived")))
    console.print(ops)
    for r in report.survivors:
        console.print(f"[yellow]survivor[/] {r['id']} line {r['line']} ({r['operator']}: "
                      f"{r['description']}): `{r['source_line']}`")
    kinds = ", ".join(f"{n} {k}" for k, n in report.equivalent_by_kind().items())
    console.print(f"equivalent: {len(report.equivalent)}" + (f" ({kinds})" if kinds else "")
                  + f"; kill rate of non-equivalent mutants: [bold]{100 * report.kill_rate:.1f}%"
                  f"[/] ({len(report.killed)} of {len(report.results) - len(report.equivalent)})"
                  f", {100 * report.kill_rate_strict:.1f}% counting only equivalences that hold "
                  f"for every input; {report.seconds:.0f} s")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m envport.verify.mutate")
    p.add_argument("--worker", help=argparse.SUPPRESS)
    args, _ = p.parse_known_args(argv)
    if args.worker:
        return _worker(args.worker)
    p.print_usage()
    print("use `envport mutate ENV` (envport.agent.commands)", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
