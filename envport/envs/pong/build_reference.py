"""cffi (API mode) builder of ``envport.envs.pong._pong_c``, the C reference of Puffer Pong.

Run at install time through ``setup.py`` (``cffi_modules``); by hand from the repository root:
``python envport/envs/pong/build_reference.py``.
"""

from __future__ import annotations

from pathlib import Path

from cffi import FFI

HERE = Path(__file__).resolve().parent

# reference.h is plain declarations apart from its preprocessor lines, which cdef cannot parse.
CDEF = "\n".join(
    line
    for line in (HERE / "reference.h").read_text().splitlines()
    if not line.lstrip().startswith("#")
)

ffibuilder = FFI()
ffibuilder.cdef(CDEF)
ffibuilder.set_source(
    "envport.envs.pong._pong_c",
    '#include "reference.c"\n',
    include_dirs=[str(HERE)],
    depends=[str(HERE / "reference.c"), str(HERE / "reference.h")],
    # No -ffast-math, and no FMA contraction: the float32 arithmetic must be the original's.
    extra_compile_args=["-O3", "-ffp-contract=off", "-pthread"],
    extra_link_args=["-pthread"],
    libraries=["pthread"],
)

if __name__ == "__main__":
    ffibuilder.compile(verbose=True)
