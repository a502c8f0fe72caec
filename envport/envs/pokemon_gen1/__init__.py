"""pokemon-gen1 (in progress): Gen 1 singles battles, verified against Pokemon Showdown.

So far: the reference side (the pinned Showdown under Node: ``reference.py``,
``reference/worker.js``; the tables generated from it, ``data/`` and ``tables.py``; Showdown's
PRNG in JAX, ``prng.py``; a text renderer), slice 2: the fixed-size battle state (``state.py``),
the bridge from Showdown's state (``bridge.py``), the Gen 1 mechanics as pure JAX functions
(``mechanics.py``) and their L1 component checks against Showdown (``components.py``), and slice
3: the turn loop in JAX (``engine.py``, supported moves in ``moves.py``) with L3 lockstep battles
against Showdown (``lockstep.py``). There is deliberately no ``SPEC`` yet: the engine plays full
battles, but the environment around it (battle creation in JAX, per-player observations and
rewards, the two-player verifier hooks) is the next step (README.md).
"""
