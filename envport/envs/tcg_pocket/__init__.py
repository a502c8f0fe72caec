"""tcg-pocket (in progress): Pokémon TCG Pocket battles (Genetic Apex, A1), from the rules
specification (``shared/specs/tcg-pocket.md``) to a readable Python reference engine.

So far: the card table (``cards.json``, transcribed by ``transcribe.py``), the effect templates
and the rules (``rules.py``), the flags of the specification's open points (``config.py``), one
injectable source of randomness (``rng.py``), deck validation (``deck.py``), the action encoding
and legality (``actions.py``) and a two-player API (``game.py``). There is deliberately no
``SPEC`` yet: the JAX engine is to be produced through ``envport translate`` (README.md).
"""
