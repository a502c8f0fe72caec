"""The XLA compilation cache the ``envport`` commands keep between runs.

A large step compiles for minutes on a laptop-class CPU (the Pokemon engine's, HalfCheetah's
physics); without a cache every new process pays it again: a resumed training run, a second
``envport verify``, each benchmark child. JAX's persistent cache keys a compiled program on its
whole HLO, the compile options, the JAX/XLA version and the device, so a changed program (a
mutant, another batch size, another dtype) is compiled, never served from a stale entry.

``ENVPORT_XLA_CACHE`` picks the folder (default ``$XDG_CACHE_HOME/envport/xla``, i.e.
``~/.cache/envport/xla``) or turns the cache off (``off``); a ``JAX_COMPILATION_CACHE_DIR`` the
caller set is used as it is. The folder is capped (least recently used entries go first).
"""

from __future__ import annotations

import os
import sys
from collections.abc import MutableMapping
from pathlib import Path

ENV_VAR = "ENVPORT_XLA_CACHE"
JAX_VAR = "JAX_COMPILATION_CACHE_DIR"
OFF = frozenset({"0", "off", "false", "no", "none"})
MAX_BYTES = 4 << 30  # a few hundred large programs; JAX evicts the least recently used


def cache_folder(environ: MutableMapping[str, str]) -> Path | None:
    """The folder the commands cache compiled programs in; None when ``ENVPORT_XLA_CACHE`` turns
    the cache off or the caller's ``JAX_COMPILATION_CACHE_DIR`` already names one."""
    value = environ.get(ENV_VAR, "").strip()
    if value.lower() in OFF:
        return None
    if JAX_VAR in environ and not value:
        return None
    if value:
        return Path(value).expanduser()
    base = environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "envport" / "xla"


def enable(environ: MutableMapping[str, str] | None = None) -> Path | None:
    """Point JAX at :func:`cache_folder` in this process and the processes it starts (they
    inherit ``JAX_COMPILATION_CACHE_DIR``); the folder used, or None.

    A folder named by ``ENVPORT_XLA_CACHE`` that cannot be made or written raises
    :class:`ValueError` naming the variable (the command exits 2 before any work); an unusable
    default folder (a read-only home) leaves the cache off."""
    env = os.environ if environ is None else environ
    folder = cache_folder(env)
    if folder is None:
        return None
    try:
        folder.mkdir(parents=True, exist_ok=True)
        if not os.access(folder, os.W_OK | os.X_OK):
            raise PermissionError(13, "not writable")
    except OSError as e:
        if env.get(ENV_VAR, "").strip():
            raise ValueError(
                f"{ENV_VAR}={env[ENV_VAR]}: cannot keep the XLA compilation cache there "
                f"({e.strerror or e}); set it to a writable folder, or to 'off'") from None
        return None
    env[JAX_VAR] = str(folder)
    env.setdefault("JAX_COMPILATION_CACHE_MAX_SIZE", str(MAX_BYTES))
    if "jax" in sys.modules:  # imported already: its config read the environment before
        import jax

        jax.config.update("jax_compilation_cache_dir", str(folder))
        jax.config.update("jax_compilation_cache_max_size",
                          int(env["JAX_COMPILATION_CACHE_MAX_SIZE"]))
    return folder
