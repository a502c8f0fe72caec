"""Scale-out: the long, embarrassingly parallel parts of envport on a Ray cluster.

Three jobs are made of independent tasks: mutation scoring (one verdict per mutant,
``envport mutate``), L4 transfer's training runs (one per backend and seed, ``envport
transfer``) and L3's reference side (each lockstep episode with its perturbed copies' replays,
``envport verify``). Each takes ``--ray ADDRESS`` (``auto``: the cluster this machine has
joined with ``ray start``; ``HOST:PORT``: a head node's GCS address; ``ray://HOST:10001``: Ray
Client). Without it they run as before: mutants in local worker processes, training runs one
after the other, L3 episodes in the verifying process; the results are the same either way
(the tests compare them).

:class:`RayExecutor` runs a module-level function over items as Ray tasks, in order
(:meth:`~RayExecutor.imap`) or as each finishes, with per-task timeouts and crashed workers
reported (:meth:`~RayExecutor.outcomes`); :class:`InProcess` is the same ``imap`` in this
process (L3's local path).

Ray is an optional extra, imported only when ``--ray`` is given: ``pip install
'envport[scale]'``. Every Ray worker must import the same envport as the driver: the driver puts
its own envport's folder first on the workers' ``PYTHONPATH`` (a local cluster then runs this
very checkout); on other hosts envport must be installed (the same version), and a folder that
does not exist there is simply skipped by Python.
"""

from __future__ import annotations

import contextlib
import contextvars
import os
import time
from collections import deque
from collections.abc import Callable, Generator, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any, Protocol

EXTRA = "pip install 'envport[scale]'"
# Ray retries a task whose worker process died (a node lost, a killed process) this often.
DEFAULT_RETRIES = 2


def own_path() -> str:
    """PYTHONPATH that makes a child process import this very envport (not another install)."""
    import envport

    root = str(Path(envport.__file__).resolve().parents[1])
    return os.pathsep.join([root, *filter(None, [os.environ.get("PYTHONPATH")])])


def require_ray() -> ModuleType:
    """The ``ray`` module, or ValueError (exit 2 in the CLI) saying how to install it."""
    try:
        import ray
    except ImportError:
        raise ValueError(f"--ray needs Ray, an optional extra of envport: {EXTRA}") from None
    return ray


def check_address(address: str) -> str:
    """``auto``, ``HOST:PORT`` or ``ray://HOST:PORT``; ValueError naming ``--ray`` otherwise."""
    if not isinstance(address, str) or not address.strip() or any(c.isspace() for c in address):
        raise ValueError(f"--ray takes 'auto' or a cluster address (HOST:PORT, "
                         f"ray://HOST:PORT), got {address!r}")
    return address.strip()


@dataclass
class Outcome:
    """One task's end: ``value`` when ``failure`` is None, else ``failure`` is ``"timeout"``
    (cancelled past its time), ``"crash"`` (its worker process died, after the retries) or
    ``"error"`` (it raised; ``detail`` says what)."""

    index: int
    value: Any = None
    failure: str | None = None
    detail: str = ""


class Executor(Protocol):
    def imap(self, fn: Callable[[Any], Any], items: Iterable[Any], *,
             env_vars: dict[str, str] | None = None) -> Generator[Any, None, None]:
        """``fn(item)`` for each item, in order, lazily; a failed task raises."""
        ...


class InProcess:
    """The tasks one after the other in this process, each when the consumer asks for it
    (what L3 does without ``--ray``)."""

    def imap(self, fn: Callable[[Any], Any], items: Iterable[Any], *,
             env_vars: dict[str, str] | None = None) -> Generator[Any, None, None]:
        for item in items:
            yield fn(item)


class RayExecutor:
    """Tasks as Ray remote functions on the cluster at ``address``.

    Connects at construction (so a wrong address or a missing Ray fails before any work, as a
    ValueError), or joins the Ray session this process already has (a test's local cluster).
    At most as many tasks are in flight as the cluster has CPUs (one CPU per task), so a task's
    timeout runs from about when it starts, not from when it was queued."""

    def __init__(self, address: str) -> None:
        self.address = check_address(address)
        ray = require_ray()
        self._ray = ray
        self._owned = not ray.is_initialized()
        if self._owned:
            try:
                ray.init(address=self.address, logging_level="warning")
            except (ConnectionError, ValueError, RuntimeError) as e:
                raise ValueError(f"--ray {self.address}: cannot join a Ray cluster there ({e}); "
                                 "start one with `ray start --head` (then --ray auto on that "
                                 "machine) or give the head's address") from None
        self.cpus = max(1, int(ray.cluster_resources().get("CPU", 1)))

    def _remote(self, fn: Callable[[Any], Any], max_retries: int,
                env_vars: dict[str, str] | None) -> Any:
        runtime_env = {"env_vars": {"PYTHONPATH": own_path(), **(env_vars or {})}}
        return self._ray.remote(num_cpus=1, max_retries=max_retries,
                                runtime_env=runtime_env)(fn)

    def imap(self, fn: Callable[[Any], Any], items: Iterable[Any], *,
             env_vars: dict[str, str] | None = None) -> Generator[Any, None, None]:
        ray = self._ray
        remote = self._remote(fn, DEFAULT_RETRIES, env_vars)
        todo, window = iter(items), 2 * self.cpus  # a few queued: no worker waits for work
        flight: deque[Any] = deque()
        try:
            for item in todo:
                flight.append(remote.remote(item))
                if len(flight) >= window:
                    break
            while flight:
                ref = flight.popleft()
                try:
                    value = ray.get(ref)
                except ray.exceptions.RayError as e:
                    raise RuntimeError(f"a Ray task of {fn.__name__} failed: {_why(e)}") from None
                for item in todo:  # refill the window by one
                    flight.append(remote.remote(item))
                    break
                yield value
        finally:  # an error or a consumer that stops early: nothing keeps running
            for ref in flight:
                ray.cancel(ref, force=True)

    def outcomes(self, fn: Callable[[Any], Any], items: Iterable[Any], *,
                 timeout_s: float | None = None, max_retries: int = DEFAULT_RETRIES,
                 env_vars: dict[str, str] | None = None) -> Iterator[Outcome]:
        ray = self._ray
        remote = self._remote(fn, max_retries, env_vars)
        pending = deque(enumerate(items))
        running: dict[Any, tuple[int, float]] = {}
        try:
            while pending or running:
                while pending and len(running) < self.cpus:
                    i, item = pending.popleft()
                    running[remote.remote(item)] = (i, time.monotonic())
                ready, _ = ray.wait(list(running), num_returns=1, timeout=1.0)
                for ref in ready:
                    i, _ = running.pop(ref)
                    try:
                        yield Outcome(i, ray.get(ref))
                    except (ray.exceptions.WorkerCrashedError,
                            ray.exceptions.NodeDiedError) as e:
                        yield Outcome(i, failure="crash", detail=_why(e))
                    except ray.exceptions.RayError as e:
                        yield Outcome(i, failure="error", detail=_why(e))
                if timeout_s is None:
                    continue
                now = time.monotonic()
                for ref, (i, since) in list(running.items()):
                    if now - since > timeout_s:
                        ray.cancel(ref, force=True)  # kills the worker process: hangs too
                        del running[ref]
                        yield Outcome(i, failure="timeout",
                                      detail=f"no result within {timeout_s:.0f} s")
        finally:
            for ref in running:
                ray.cancel(ref, force=True)

    def close(self) -> None:
        if self._owned and self._ray.is_initialized():
            self._ray.shutdown()


def _why(e: BaseException) -> str:
    cause = getattr(e, "cause", None)
    if isinstance(cause, BaseException):
        return f"{type(cause).__name__}: {cause}"
    return f"{type(e).__name__}: {str(e).strip().splitlines()[-1] if str(e).strip() else ''}"


_ACTIVE: contextvars.ContextVar[RayExecutor | None] = contextvars.ContextVar(
    "envport_executor", default=None)


def active() -> RayExecutor | None:
    """The executor of the enclosing :func:`session`, if any (how ``envport verify --ray``
    reaches L3 through the layers in between)."""
    return _ACTIVE.get()


@contextlib.contextmanager
def session(ray: str | None) -> Iterator[RayExecutor | None]:
    """With ``ray`` (an address), a :class:`RayExecutor` that :func:`active` returns inside
    the block, closed after it; with None, nothing changes (local, as without ``--ray``)."""
    if ray is None:
        yield None
        return
    ex = RayExecutor(ray)
    token = _ACTIVE.set(ex)
    try:
        yield ex
    finally:
        _ACTIVE.reset(token)
        ex.close()
