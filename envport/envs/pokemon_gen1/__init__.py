"""pokemon-gen1 (in progress): Gen 1 singles battles, verified against Pokemon Showdown.

This slice holds the reference side only: the pinned Showdown under Node (``reference.py``,
``reference/worker.js``), the tables generated from it (``data/``), Showdown's PRNG in JAX
(``prng.py``) and a text renderer. There is deliberately no ``SPEC`` yet: the registry lists every
environment package with one, and the JAX engine is the next slice (README.md).
"""
