"""Why a surviving mutant is equivalent to the original, when it is.

In order: the same traced programs (jaxprs) in every declared mode (:func:`fingerprint`, checked
before any layer runs); the same optimised XLA programs (:func:`compiled_programs`); a float
boundary swap under a tolerance (:func:`float_boundary`); commutative arguments; and the
environment's own table of mutants shown equivalent by hand
(``SPEC.verification.equivalent_mutants``). Applied only to survivors, so a reason never
overrides a kill; a table reason that covers more sites than it was written for could still
hide an undetected bug, so a key must name its site where a line has several
(:func:`check_known_table`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from envport.verify.mutation.generate import Mutant


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


def explain_equivalence(spec: Any, envs: dict[str, Any], mutant: Mutant, path: str,
                        ref: dict[str, Any], boundary: bool) -> tuple[str, str]:
    """(kind, why) a surviving mutant is equivalent, or ("", "") when it cannot be shown.

    ``envs`` are the mutant (applied) in every declared mode, by mode name; ``ref`` holds the
    original's compiled programs and fingerprints by mode, and ``boundary`` whether the
    mutation is a float boundary swap, both found with the mutant not applied. A reason must
    hold in every mode.
    """
    for mode, env in envs.items():
        mine, theirs = fingerprint(env), ref["fingerprint"][mode]
        if not all(mine.get(k) == theirs.get(k) for k in PYTHON_LEVEL):
            return "", ""  # a space or flag differs: observable outside the traced programs
    try:
        if all(compiled_programs(env) == ref["programs"][mode] for mode, env in envs.items()):
            return "compiled", (
                "same compiled program in every declared mode: XLA optimises reset, "
                "sample_draws and transition to instruction-for-instruction the same code as "
                "the original's (e.g. an out-of-range constant index that JAX clamps back, an "
                "operation folded away), so the two cannot behave differently")
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
    return known_reason(spec, path, mutant)


# A table key's fourth element that covers every site of its mutation on the line (a reason
# written for all of them), in place of one site's column.
EVERY_SITE = "every site"


def known_reason(spec: Any, path: str, mutant: Mutant) -> tuple[str, str]:
    """The environment's own table's (kind, why) for ``mutant`` of the file at ``path``, or
    ("", ""): a key naming the column holds for that site of the line only, one ending in
    :data:`EVERY_SITE` for every site of that mutation on the line, one with neither for the
    line's one site (:func:`check_known_table` refuses it where the line has several)."""
    known = spec.verification.equivalent_mutants
    table = known() if known is not None else {}
    key = (Path(path).name, mutant.source_line, mutant.description)
    return table.get((*key, mutant.column), table.get((*key, EVERY_SITE), table.get(key, ("", ""))))


def check_known_table(table: dict[tuple[Any, ...], tuple[str, str]],
                      sites: Iterable[tuple[str, Mutant]]) -> None:
    """Raise ValueError naming each key of an environment's table of equivalent mutants that
    has no fourth element while its line has several sites of its mutation among ``sites``
    ((file name, mutant) pairs): a reason written for one site would be applied to the others
    too, hiding a mutant no one examined (``t_pp > 0`` beside ``moves > 0`` on one line, say).
    Such a key names its site's column, or :data:`EVERY_SITE` where its reason covers all."""
    columns: dict[tuple[Any, ...], list[int]] = {}
    for file, m in sites:
        columns.setdefault((file, m.source_line, m.description), []).append(m.column)
    bad = [f"{key} matches columns {sorted(columns[key])}" for key in table
           if len(key) == 3 and len(columns.get(key, ())) > 1]
    if bad:
        raise ValueError("the table of equivalent mutants has keys without a column on lines "
                         "with several sites of their mutation; add the column of the site "
                         f"each reason is for, or {EVERY_SITE!r} where it covers every site: "
                         + "; ".join(bad))


# jax.numpy functions whose first two arguments commute, and why.
_COMMUTATIVE = {
    "clip": "jnp.clip(x, lo, hi) is minimum(hi, maximum(lo, x)) and maximum commutes",
    "maximum": "maximum commutes", "minimum": "minimum commutes", "add": "addition commutes",
    "multiply": "multiplication commutes", "logical_and": "and commutes",
    "logical_or": "or commutes", "logical_xor": "xor commutes", "equal": "equality commutes",
    "not_equal": "inequality commutes", "bitwise_and": "and commutes",
    "bitwise_or": "or commutes", "bitwise_xor": "xor commutes",
}
