"""The verification harness of a translation in progress (runs in a subprocess of the loop).

``python -m envport.agent.harness verify --workspace W --config W/harness/config.json`` builds
an ``EnvSpec`` from the reference (``module:Class``) and the workspace's translation
(``translation/jax_env.py``) and bridge (``translation/bridge.py``), runs the hierarchy with
``envport.verify.verify`` and writes the report as JSON (``--out``) or prints it with a repair
prompt (what an agent sees when it reruns the command it was given). A fresh process per
verification means fresh imports of the agent's code, and a crash or hang in it cannot take the
loop down (the loop kills the process group on timeout).

Module checks (``--module``): the L1 checks of one module of the plan: the agent's own tests
for a helper module; the property layer for the environment; bridge checks (round trip within
tolerance, state and draws structure equal to the translation's) for the bridge.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import inspect
import json
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from envport.verify.layers import HIERARCHY, LAYERS

PROTOCOL = (
    "A reference class must implement envport's Reference protocol "
    "(envport/core/reference.py): reset(seed) -> obs; step(action) -> (obs, reward, "
    "terminated, truncated, info); get_state() -> dict[str, ndarray]; set_state(dict); "
    "tape() -> dict of the random draws consumed by the last step."
)
PROTOCOL_METHODS = ("reset", "step", "get_state", "set_state", "tape")


class ReferenceError_(ImportError):
    """The reference cannot be imported or does not implement the protocol."""


def load_object(ref: str) -> Any:
    """``package.module:Name`` -> the object."""
    module_name, _, attr = ref.partition(":")
    if not module_name or not attr:
        raise ReferenceError_(f"expected module:Name, got {ref!r}")
    try:
        module = importlib.import_module(module_name)
    except Exception as e:
        raise ReferenceError_(f"cannot import {module_name!r}: {type(e).__name__}: {e}") from e
    try:
        return getattr(module, attr)
    except AttributeError as e:
        raise ReferenceError_(f"module {module_name!r} has no {attr!r}") from e


def load_reference_class(ref: str) -> type:
    try:
        cls = load_object(ref)
    except ReferenceError_ as e:
        raise ReferenceError_(f"{e}\n{PROTOCOL}") from e
    missing = [m for m in PROTOCOL_METHODS if not callable(getattr(cls, m, None))]
    if missing:
        raise ReferenceError_(f"{ref} lacks {', '.join(missing)}.\n{PROTOCOL}")
    return cls


# ---------------------------------------------------------------- the spec
def _import_translation(workspace: Path, package: str) -> tuple[Any, Any]:
    if str(workspace) not in sys.path:
        sys.path.insert(0, str(workspace))
    env_module = importlib.import_module(f"{package}.jax_env")
    return env_module, package


def _find_class(module: Any, name: str | None, test: Callable[[type], bool], what: str) -> type:
    if name and isinstance(getattr(module, name, None), type):
        return getattr(module, name)
    found = [obj for obj in vars(module).values() if inspect.isclass(obj)
             and obj.__module__ == module.__name__ and test(obj)]
    if len(found) != 1:
        raise ImportError(f"{module.__name__} must define {what}"
                          + (f" named {name}" if name else "")
                          + f" (found {[c.__name__ for c in found]})")
    return found[0]


def translation_factories(cfg: dict[str, Any], workspace: Path) -> tuple[Callable, Callable]:
    from envport.core.api import Environment

    package = cfg.get("package", "translation")
    env_module, _ = _import_translation(workspace, package)
    env_cls = _find_class(env_module, cfg.get("env_class"),
                          lambda c: issubclass(c, Environment) and c is not Environment,
                          "one envport.core.api.Environment subclass")

    def make_bridge(**kwargs: Any) -> Any:
        bridge_module = importlib.import_module(f"{package}.bridge")
        cls = _find_class(bridge_module, cfg.get("bridge_class"),
                          lambda c: all(hasattr(c, m) for m in ("to_jax", "from_jax", "draws")),
                          "one bridge class (to_jax, from_jax, draws)")
        return cls(**kwargs)

    return (lambda **kwargs: env_cls(**kwargs)), make_bridge


def _space_sampler(space: Any) -> Callable[[np.random.Generator], Any] | None:
    """A numpy sampler for a Discrete/Box space (envport's or Gymnasium's)."""
    n = getattr(space, "n", None)
    if n is not None:
        return lambda rng: int(rng.integers(int(n)))
    low, high = getattr(space, "low", None), getattr(space, "high", None)
    shape = getattr(space, "shape", None)
    if low is not None and high is not None and shape is not None:
        lo = np.broadcast_to(np.asarray(low, np.float64), shape).clip(-1e6, 1e6)
        hi = np.broadcast_to(np.asarray(high, np.float64), shape).clip(-1e6, 1e6)
        return lambda rng: rng.uniform(lo, hi).astype(np.float32)
    return None


def _generic_bins(state: dict[str, np.ndarray]) -> tuple:
    """Coarse bins of a state for the novelty policy: the first two values of each field
    (hashable: nested tuples, whatever the field's shape)."""
    return tuple(tuple(np.round(np.asarray(v, np.float64).ravel()[:2], 1).tolist()) for v in
                 state.values())


def build_spec(cfg: dict[str, Any], workspace: Path) -> Any:
    """The EnvSpec of the workspace's translation against the reference."""
    from envport.core.registry import EnvSpec, Tolerance, Verification
    from envport.core.registry import spec as registered

    ref_cls = load_reference_class(cfg["reference"])
    kwargs = cfg.get("reference_kwargs") or {}
    make, make_bridge = translation_factories(cfg, workspace)

    def make_reference(**more: Any) -> Any:
        return ref_cls(**{**kwargs, **more})

    tol = cfg.get("tolerance")
    name = cfg.get("name", "translation")
    like = cfg.get("like")
    if like:
        base = registered(like)
        events_ok = _state_events(base, make_reference)
        verification = dataclasses.replace(
            base.verification, components={},
            sample_reference_events=base.verification.sample_reference_events
            if events_ok else None,
            sample_translation_events=_translation_reset_events(make, make_bridge)
            if events_ok else None)
        if tol:
            verification = dataclasses.replace(verification, tolerance=Tolerance(**tol),
                                               field_tolerance={})
        return dataclasses.replace(
            base, name=name, make=make, make_bridge=make_bridge, make_reference=make_reference,
            status="in progress", verification=verification)
    probe = make_reference()
    sampler = _space_sampler(getattr(probe, "action_space", None)) or _space_sampler(
        make().action_space())
    if sampler is None:
        raise ImportError("cannot sample actions: give the reference an `action_space` or "
                          "the translation a Discrete/Box action_space()")
    tolerance = Tolerance(**tol) if tol else Tolerance()
    def scripted(obs: np.ndarray, rng: np.random.Generator) -> Any:
        return sampler(rng)

    legal_action = scripted_action = None
    if is_masked(probe):
        legal_action, scripted_action = masked_policies(ref_cls, kwargs)
    return EnvSpec(
        name=name, summary="translation in progress", reference=cfg["reference"], make=make,
        make_reference=make_reference, make_bridge=make_bridge, status="in progress",
        verification=Verification(
            tolerance=tolerance, tolerance_note=f"{tolerance} on every field",
            scripted_policy=scripted, random_action=sampler, legal_action=legal_action,
            scripted_action=scripted_action,
            state_bins=_generic_bins, max_rollout_steps=int(cfg.get("max_rollout_steps", 1000))))


def is_masked(ref: Any) -> bool:
    """A reference with legal-action masks: ``legal_action(state, rng)`` or ``action_mask()``."""
    return callable(getattr(ref, "legal_action", None)) or callable(
        getattr(ref, "action_mask", None))


def masked_policies(ref_cls: type, kwargs: dict[str, Any]
                    ) -> tuple[Callable[..., Any], Callable[..., Any]]:
    """For a reference with masks: (legal_action, scripted_action), both of the state.

    ``legal_action(state, rng)`` is the reference's own, or a uniform choice from its
    ``action_mask()`` after ``set_state``; ``scripted_action(state, rng)`` is the reference's
    ``scripted_action(rng)`` after ``set_state`` where it has one, else a legal action. Both run
    on a private instance, so the episode's reference is not moved.
    """
    private = ref_cls(**kwargs)

    def choose(rng: np.random.Generator) -> Any:
        legal = np.flatnonzero(np.asarray(private.action_mask()))
        if len(legal) == 0:
            raise ValueError(f"{ref_cls.__name__}: no legal action in this state")
        return int(rng.choice(legal))

    def legal_action(state: dict[str, np.ndarray], rng: np.random.Generator) -> Any:
        if callable(getattr(private, "legal_action", None)):
            return private.legal_action(state, rng)
        private.set_state(state)
        return choose(rng)

    def scripted_action(state: dict[str, np.ndarray], rng: np.random.Generator) -> Any:
        if not callable(getattr(private, "scripted_action", None)):
            return legal_action(state, rng)
        private.set_state(state)
        return private.scripted_action(rng)

    return legal_action, scripted_action


def _state_events(base: Any, make_reference: Callable[..., Any]) -> bool:
    """Can the distribution test run generically: are the base's events reset-state fields?"""
    if base.verification.sample_reference_events is None:
        return False
    try:
        names = set(base.verification.sample_reference_events(2, 0))
        ref = make_reference()
        ref.reset(0)
        return names <= set(ref.get_state())
    except Exception:
        return False


def _translation_reset_events(make: Callable, make_bridge: Callable) -> Callable:
    def sample(n: int, seed: int) -> dict[str, np.ndarray]:
        import jax

        env = make()
        states, _ = jax.vmap(env.reset)(jax.random.split(jax.random.key(seed), n))
        return {k: np.asarray(v) for k, v in make_bridge().from_jax(states).items()}

    return sample


# ---------------------------------------------------------------- module checks
def bridge_checks(spec: Any, seed: int, n_states: int = 16) -> Any:
    """L1 of the bridge: reference states survive to_jax/from_jax within tolerance, and the
    bridged state and draws have the translation's own structure (shapes and dtypes)."""
    import jax

    from envport.core.reference import index_state, stack_states
    from envport.verify.compare import compare_fields
    from envport.verify.policies import draw_action
    from envport.verify.report import Failure, LayerResult

    t0 = time.perf_counter()
    failures = []
    env, bridge, ref = spec.make(), spec.make_bridge(), spec.make_reference()
    rng = np.random.default_rng(seed)
    states, tapes = [], []
    for episode in range(4):
        ref.reset(seed * 1000 + episode)
        for _ in range(n_states // 4):
            states.append(ref.get_state())
            _, _, term, trunc, _ = ref.step(draw_action(spec, states[-1], rng))
            tapes.append(ref.tape())
            if term or trunc:
                break
    batch = stack_states(states)
    back = bridge.from_jax(bridge.to_jax(batch))
    for i, s in enumerate(states):
        diffs = compare_fields({f"state.{k}": v for k, v in s.items()},
                               {f"state.{k}": v for k, v in index_state(back, i).items()},
                               spec.tolerance_for)
        if diffs:
            failures.append(Failure(
                layer="property", test_id="property[bridge:round-trip]", seed=seed,
                message="from_jax(to_jax(state)) differs from the reference state",
                state=s, diffs=diffs))
            break
    want, _ = env.reset(jax.random.key(seed))
    got = bridge.to_jax(states[0])

    def shapes(tree: Any) -> list[tuple[Any, ...]]:
        return [(tuple(np.shape(x)), str(np.asarray(x).dtype))
                for x in jax.tree_util.tree_leaves(tree)]

    if str(jax.tree_util.tree_structure(want)) != str(jax.tree_util.tree_structure(got)) or \
            shapes(want) != shapes(got):
        failures.append(Failure(
            layer="property", test_id="property[bridge:state-structure]", seed=seed,
            message=f"to_jax(reference state) has structure {shapes(got)}, the translation's "
                    f"reset state has {shapes(want)}"))
    want_d = env.sample_draws(jax.random.key(seed), want, env.default_params())
    got_d = bridge.draws(tapes[0] if tapes else {}, states[0])
    if str(jax.tree_util.tree_structure(want_d)) != str(jax.tree_util.tree_structure(got_d)):
        failures.append(Failure(
            layer="property", test_id="property[bridge:draws-structure]", seed=seed,
            message=f"bridge.draws(...) has structure {jax.tree_util.tree_structure(got_d)}, "
                    f"sample_draws returns {jax.tree_util.tree_structure(want_d)}"))
    return LayerResult("property", passed=not failures, counts={"tests": 3},
                       failures=failures, seconds=time.perf_counter() - t0)


def agent_tests(workspace: Path, module: str | None, package: str
                ) -> tuple[int, int, str] | None:
    """Run the agent's own tests of ``module`` (all of them if None): (passed, failed, tail).

    In this process (JAX is already imported and warm; the harness process is disposable).
    """
    import contextlib
    import io
    import re

    import pytest

    tests = workspace / package / "tests"
    target = tests / f"test_{module}.py" if module else tests
    if not target.exists() or not any(target.rglob("test_*.py") if target.is_dir() else [1]):
        return None
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer), contextlib.redirect_stderr(buffer):
        code = pytest.main(["-q", "-x", "-p", "no:cacheprovider", "--rootdir", str(workspace),
                            str(target)])
    out = buffer.getvalue()
    passed = sum(int(n) for n in re.findall(r"(\d+) passed", out))
    failed = sum(int(n) for n in re.findall(r"(\d+) (?:failed|error)", out))
    if int(code) not in (0, 5) and failed == 0:
        failed = 1
    return passed, failed, out.strip()[-3000:]


# ---------------------------------------------------------------- entry points
def verify_workspace(cfg: dict[str, Any], workspace: Path, *, layers: tuple[str, ...] | None,
                     seed: int, sizes: dict[str, Any], module: str | None = None,
                     module_kind: str | None = None, command: str = "") -> dict[str, Any]:
    """Verification of the workspace as a JSON-ready dict (``report`` is Report.to_json())."""
    from envport.verify.report import Failure, LayerResult, Report
    from envport.verify.runner import verify

    t0 = time.perf_counter()
    package = cfg.get("package", "translation")
    report = Report(env=cfg.get("name", "translation"), command=command)
    if module_kind == "helper":
        # A helper is checked by its own tests alone: the environment that imports it (and
        # the spec built from it) does not exist yet while the helpers are translated.
        if str(workspace) not in sys.path:
            sys.path.insert(0, str(workspace))
        helper = LayerResult("property", passed=True, counts={"tests": 0})
        own = agent_tests(workspace, module, package)
        if own is None:
            helper.passed = False
            helper.failures.append(Failure(
                layer="property", test_id="property[agent-tests]",
                message=f"write the L1 tests of this module in {package}/tests/test_{module}.py"))
        else:
            add_agent_tests(helper, own)
        report.layers["property"] = helper
        return _result(report, module, t0)
    try:
        spec = build_spec(cfg, workspace)
        report.tolerance_note = spec.verification.tolerance_note
    except ReferenceError_:
        raise
    except Exception as e:  # the agent's code does not import: an L1 failure it must fix
        tb = traceback.format_exc(limit=-6)
        report.layers["property"] = LayerResult("property", passed=False, counts={"tests": 1},
                                                failures=[Failure(
                                                    layer="property",
                                                    test_id="property[import]",
                                                    message=f"the translation does not load: "
                                                            f"{type(e).__name__}: {e}\n{tb}")])
        return _result(report, module, t0)
    result: LayerResult | None = None
    if module_kind == "bridge":  # (the env's own L1 passed in its module check)
        result = bridge_checks(spec, seed)
    elif module_kind == "env":
        result = verify(spec, ("property",), seed=seed, **_sizes(sizes, "property")
                        ).layers["property"]
    if result is not None:  # a module check: L1 of that module plus the agent's own tests
        own = agent_tests(workspace, None, package)  # every test of the agent's
        if own is not None:
            add_agent_tests(result, own)
        report.layers["property"] = result
        return _result(report, module, t0)
    wanted = tuple(layer for layer in LAYERS if layers is None or layer in layers)
    for layer in wanted:
        try:
            part = verify(spec, (layer,), seed=seed, **sizes)
        except Exception as e:  # the translation broke the layer itself: a failure to repair
            tb = traceback.format_exc(limit=-8)
            report.layers[layer] = LayerResult(layer, passed=False, failures=[Failure(
                layer=layer, test_id=f"{layer}[crash]",
                message=f"the {layer} check crashed on the translation: "
                        f"{type(e).__name__}: {e}\n{tb}")])
            continue
        report.layers.update(part.layers)
        if part.interrupted:
            report.interrupted = True
            break
    hook = cfg.get("transfer_check")
    if hook and (layers is None or "transfer" in layers) and report.passed:
        report.layers["transfer"] = _transfer(hook, spec, seed)
    return _result(report, module, t0)


def _sizes(sizes: dict[str, Any], layer: str) -> dict[str, Any]:
    return {k: v for k, v in sizes.items() if k == "examples"} if layer == "property" else sizes


def _transfer(hook: str, spec: Any, seed: int) -> Any:
    """L4 hook ``module:function(spec, seed) -> LayerResult | bool``."""
    from envport.verify.report import Failure, LayerResult

    t0 = time.perf_counter()
    try:
        out = load_object(hook)(spec, seed)
    except Exception as e:
        return LayerResult("transfer", passed=False, failures=[Failure(
            layer="transfer", test_id="transfer[hook]", message=f"{type(e).__name__}: {e}")],
            seconds=time.perf_counter() - t0)
    if isinstance(out, bool):
        return LayerResult("transfer", passed=out, counts={"checks": 1},
                           failures=[] if out else [Failure(
                               layer="transfer", test_id="transfer[tost]",
                               message="policy transfer is not equivalent")],
                           seconds=time.perf_counter() - t0)
    out.name = "transfer"
    return out


def add_agent_tests(result: Any, own: tuple[int, int, str]) -> None:
    """Count the agent's own tests (passed, failed, output tail) into an L1 ``LayerResult``."""
    from envport.verify.report import Failure

    passed, failed, tail = own
    result.counts["agent tests"] = passed + failed
    if failed:
        result.passed = False
        result.failures.append(Failure(layer="property", test_id="property[agent-tests]",
                                       message=f"your own tests fail:\n{tail}"))


def _result(report: Any, module: str | None, t0: float) -> dict[str, Any]:
    return {"report": report.to_json(), "prompt": report.to_prompt(), "module": module,
            "command": report.command, "seconds": round(time.perf_counter() - t0, 2)}


def bench_workspace(cfg: dict[str, Any], workspace: Path, batch_sizes: list[int],
                    steps: int = 200, with_reference: bool = True) -> dict[str, Any]:
    """Random-action steps per second of the translation (vmapped, the rollout in one jitted
    ``lax.scan``, auto-reset) at each batch size, and (``with_reference``) of the reference's
    Python loop."""
    # envport's own benchmark: the rollout in one jitted lax.scan with auto-reset, whose
    # observations and rewards are carried so XLA cannot drop the step as dead code.
    from envport.bench.throughput import jax_throughput
    from envport.verify.policies import draw_action

    make, _ = translation_factories(cfg, workspace)
    rows = [{**r, "backend": "translation"} for r in jax_throughput(make(), batch_sizes, steps)]
    if not with_reference:
        return {"results": rows, "steps": steps}
    ref = load_reference_class(cfg["reference"])(**(cfg.get("reference_kwargs") or {}))
    spec = build_spec(cfg, workspace)
    rng = np.random.default_rng(0)
    ref.reset(0)
    n, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < 1.0:
        _, _, term, trunc, _ = ref.step(draw_action(spec, ref.get_state(), rng))
        n += 1
        if term or trunc:
            ref.reset(n)
    rows.append({"backend": "reference", "batch_size": 1,
                 "steps_per_second": n / (time.perf_counter() - t0)})
    return {"results": rows, "steps": steps}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m envport.agent.harness",
                                description="verify or benchmark a translation workspace")
    sub = p.add_subparsers(dest="command", required=True)
    for name in ("verify", "bench"):
        q = sub.add_parser(name)
        q.add_argument("--workspace", default=".")
        q.add_argument("--config", default="harness/config.json")
        q.add_argument("--out", help="write the result as JSON here")
        q.add_argument("--jax-cache", help="persistent compilation cache directory")
    v = sub.choices["verify"]
    v.add_argument("--layer", action="append", choices=HIERARCHY)
    v.add_argument("--module", help="L1 checks of one module of the plan only")
    v.add_argument("--module-kind", choices=("helper", "env", "bridge"))
    v.add_argument("--seed", type=int)
    for size in ("examples", "states", "episodes", "samples"):
        v.add_argument(f"--{size}", type=int)
    b = sub.choices["bench"]
    b.add_argument("--batch-sizes", type=int, nargs="+", default=[1, 256])
    b.add_argument("--steps", type=int, default=200)
    b.add_argument("--translation-only", action="store_true",
                   help="time the translation only (the interleaved old/new comparison)")
    args = p.parse_args(argv)
    workspace = Path(args.workspace).resolve()
    config = Path(args.config)
    cfg = json.loads((config if config.is_absolute() else workspace / config).read_text())
    if args.jax_cache:
        import jax

        jax.config.update("jax_compilation_cache_dir", args.jax_cache)
        jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.2)
    try:
        if args.command == "bench":
            result = bench_workspace(cfg, workspace, args.batch_sizes, args.steps,
                                     with_reference=not args.translation_only)
        else:
            sizes = dict(cfg.get("sizes") or {})
            sizes.update({k: getattr(args, k) for k in ("examples", "states", "episodes",
                                                         "samples") if getattr(args, k)})
            seed = cfg.get("seed", 0) if args.seed is None else args.seed
            kind = args.module_kind
            if args.module and not kind:
                kind = next((m["kind"] for m in cfg.get("modules", [])
                             if m["name"] == args.module), "env")
            rerun = "python harness/verify.py" + "".join(
                f" --layer {x}" for x in args.layer or []) + (
                f" --module {args.module}" if args.module else "") + f" --seed {seed}"
            result = verify_workspace(cfg, workspace, seed=seed, sizes=sizes,
                                      layers=tuple(args.layer) if args.layer else None,
                                      module=args.module, module_kind=kind, command=rerun)
    except ReferenceError_ as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=1, default=str))
    elif args.command == "verify":
        print(result["prompt"])
    else:
        print(json.dumps(result, indent=1))
    if args.command == "verify":
        return 0 if result["report"]["passed"] else 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
