"""L2 against reference steps recorded once per mutation run.

A mutant changes the translation only, so the reference's side of L2 (the sampled states, the
actions, the reference's next states and its draws) is the same for every mutant of a run. For a
reference that is slow to step (Showdown under Node), :func:`record` computes it once, in the
process that starts the run, into the run's temporary folder (:func:`save`, :func:`load`; never
committed: each run records afresh from the live reference), and :func:`check` compares a
mutant's translation on those cases: one vmapped, jitted transition over all of them, every
field compared as L2 compares it. A translation opts in with ``mutation_plan =
{"recorded_interaction": True, ...}`` on its class (``execute.mutation_plan``), and may name
``interaction_sources``: references of the same kind whose resets reach states L2's resets
rarely do (Pokemon: teams with any supported move), each adding as many cases again.
"""

from __future__ import annotations

import pickle
import sys
import time
from pathlib import Path
from typing import Any

from envport.verify.report import Failure, LayerResult


def record(spec: Any, states: int, seed: int, sources: tuple[str, ...] = ()) -> list[Any]:
    """L2's cases of ``spec`` (default params) with the reference's results, as
    ``check_interaction`` draws them for ``states`` and ``seed``; then ``states`` more from each
    of ``sources`` (the plan's ``interaction_sources``: ``"module:factory"`` of a reference of
    the same kind whose resets reach other states, e.g. other teams), drawn the same way (L2's
    policies and ``perturb``) from that reference's own resets, with its own seed. Every case is
    stepped by the run's reference; a state it cannot take back is left out and counted."""
    from envport.core.registry import lazy
    from envport.core.seeds import derive_seed
    from envport.verify.interaction import sample_cases

    ref = [spec.make_reference()]
    cases = _stepped(spec, ref, sample_cases(spec, ref[0], states, seed), "the run's reference",
                     states)
    for i, target in enumerate(sources):
        name = target.rpartition(":")[2]
        drawn = sample_cases(spec, lazy(target)(), states, derive_seed(seed, 1000 + i))
        for c in drawn:
            c.origin = f"{name}/{c.origin}"
        cases += _stepped(spec, ref, drawn, name, states)
    return cases


def _stepped(spec: Any, ref: list[Any], cases: list[Any], name: str, states: int) -> list[Any]:
    """``cases`` with the results of the run's reference ``ref[0]`` (replaced after a failed
    injection), less the states it cannot take back: no L2 case for the original nor for a
    mutant; left out, counted, said."""
    from envport.verify.interaction import step_cases

    kept, refused = step_cases(cases, ref, lambda k: spec.make_reference())
    if len(refused) > states // 2:  # not the odd state: the source is broken
        raise ValueError(f"{name}: the reference cannot inject {len(refused)} of its "
                         f"{states} states (first: {refused[0]})")
    if refused:
        print(f"recorded L2: {len(refused)} of {states} states from {name} left out: the "
              f"reference cannot inject them (first: {refused[0]})", file=sys.stderr)
    return kept


def save(cases: list[Any], path: Path) -> None:
    path.write_bytes(pickle.dumps(cases, protocol=pickle.HIGHEST_PROTOCOL))


def load(path: Path) -> list[Any]:
    # the run's own file, written by save() in its temporary folder
    return pickle.loads(path.read_bytes())


def check(spec: Any, env: Any, cases: list[Any], seed: int) -> LayerResult:
    """The translation ``env`` stepped from every recorded case; fails at any differing field."""
    from envport.verify.compare import compare_fields
    from envport.verify.interaction import step_translation

    t0 = time.perf_counter()
    got = step_translation(env, spec.make_bridge(), cases)
    failures: list[Failure] = []
    n_failed = 0
    for c, g in zip(cases, got, strict=True):
        diffs = compare_fields(c.expected, g, spec.tolerance_for)
        if not diffs:
            continue
        n_failed += 1
        if len(failures) < 3:
            failures.append(Failure(
                layer="interaction", test_id=f"interaction[{c.origin}, recorded]",
                message=f"one step from a recorded {c.origin} state diverges in "
                        f"{', '.join(d.field for d in diffs)}",
                seed=seed, state=c.state, action=c.action, draws=c.tape, diffs=diffs))
    notes = [f"{len(cases)} reference steps recorded once for the run"]
    if n_failed:
        notes.append(f"{n_failed} of {len(cases)} states diverge")
    return LayerResult("interaction", passed=n_failed == 0, seconds=time.perf_counter() - t0,
                       counts={"states": len(cases)}, failures=failures, notes=notes)
