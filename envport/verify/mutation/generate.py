"""Generating mutants: AST rewrites of a translation's source, one top-level statement each.

Operators: arithmetic and comparison operator swaps, constant perturbations, dropped state
updates, swapped arguments and fields, swapped functions, removed negations
(:data:`OPERATORS`). :func:`generate` lists every mutant of a module in source order,
:func:`sample` draws a subset evenly over operators; :mod:`apply` applies one.
"""

from __future__ import annotations

import ast
import copy
import dataclasses
import inspect
import random
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

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
    module: str = ""  # the mutated module's name (where a translation has several)
    # where on source_line the changed segment starts: tells apart two sites of one mutation
    # on a line (the two 0s of ``where(x != 0, y, 0)``) for the known equivalents
    column: int = -1

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


# ---------------------------------------------------------------- generating mutants
@dataclass
class _Site:
    operator: str
    node: ast.AST  # the node in the ORIGINAL tree
    make: Callable[[ast.AST], ast.AST]  # copy of node -> mutated node
    description: str


def _segment(lines: list[str], node: ast.AST) -> str:
    """``ast.get_source_segment`` on the module's lines split once (it splits the whole source
    on every call), whitespace runs made one space."""
    first, last = getattr(node, "lineno", None), getattr(node, "end_lineno", None)
    start, end = getattr(node, "col_offset", None), getattr(node, "end_col_offset", None)
    if first is None or last is None or start is None or end is None:
        return " ".join(ast.unparse(node).split())
    if first == last:  # offsets count UTF-8 bytes
        text = lines[first - 1].encode()[start:end].decode()
    else:
        text = "\n".join([lines[first - 1].encode()[start:].decode(), *lines[first:last - 1],
                          lines[last - 1].encode()[:end].decode()])
    return " ".join((text or ast.unparse(node)).split())


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


def _put_at(tree: ast.AST, path: list[tuple[str, int | None]], new: ast.AST) -> None:
    """Put ``new`` where ``path`` (:func:`_node_path`) leads in ``tree``."""
    parent: Any = tree
    for name, index in path[:-1]:
        parent = getattr(parent, name)
        if index is not None:
            parent = parent[index]
    name, index = path[-1]
    if index is None:
        setattr(parent, name, new)
    else:
        getattr(parent, name)[index] = new


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
    lines = source.replace("\r\n", "\n").replace("\r", "\n").split("\n")  # as the parser counts
    out = []
    for n, (index, site) in enumerate(sites, 1):
        stmt = tree.body[index]
        path = _node_path(stmt, site.node)
        # the mutated node is made from a copy of the site's node and put in the statement's
        # place for it while the statement is printed, then the original put back (a copy of
        # the whole statement per mutant took most of the time on large modules)
        mutated_node = site.make(copy.deepcopy(site.node))
        ast.fix_missing_locations(ast.copy_location(mutated_node, site.node))
        if path:
            _put_at(stmt, path, mutated_node)
            try:
                statement_code = ast.unparse(stmt)
            finally:
                _put_at(stmt, path, site.node)
        else:
            statement_code = ast.unparse(mutated_node)
        original = _segment(lines, site.node)
        mutated = " ".join(ast.unparse(mutated_node).split())
        if original == mutated or ast.unparse(mutated_node) == ast.unparse(site.node):
            continue
        line = lines[getattr(site.node, "lineno", 1) - 1]
        out.append(MutantSource(
            Mutant(id=f"m{n:03d}", operator=site.operator, line=getattr(site.node, "lineno", 0),
                   original=original, mutated=mutated, top_level=_top_name(stmt),
                   statement=index, description=site.description, source_line=line.strip(),
                   column=getattr(site.node, "col_offset", -1) - (len(line) - len(line.lstrip()))),
            statement_code))
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
