"""pokemon-gen1 (in progress): Gen 1 singles battles, verified against Pokemon Showdown.

So far: the reference side (the pinned Showdown under Node: ``reference.py``,
``reference/worker.js``; the tables generated from it, ``data/`` and ``tables.py``; Showdown's
PRNG in JAX, ``prng.py``; a text renderer) and slice 2: the fixed-size battle state
(``state.py``), the bridge from Showdown's state (``bridge.py``), the Gen 1 mechanics as pure JAX
functions (``mechanics.py``) and their L1 component checks against Showdown (``components.py``).
There is deliberately no ``SPEC`` yet: the registry lists every environment package with one, and
the turn loop is the next slice (README.md).
"""
