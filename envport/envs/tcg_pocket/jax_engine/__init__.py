"""The JAX engine of Pokémon TCG Pocket, produced through envport's translation loop with the
manual agent. Since the fifth run (``envport translate --reference ...TcgPocketReference
--reference-kwargs '{"pool": "full"}' --agent manual``; 12 iterations, workspace commit
``50f8de3f``; report ``docs/runs/tcg-full/``) each module is that run's workspace module
(``translation/``) with the imports and the card table's path changed. Each module of that run
is this folder's module of the fourth run (``trainers`` pool, ``docs/runs/tcg-trainers/``),
extended where the whole card pool needs it (``cards``, ``state``, ``rules``; docstrings of
``jax_env``); the third run verified the ``status`` pool, the second the ``plain`` pool, the
first the ``basic`` pool. It covers the reference's ``full`` pool (and so every smaller pool):
``rules.py`` says what is and is not covered, the README's "JAX engine" section which layers
pass.

    from envport.envs.tcg_pocket.jax_engine.jax_env import TcgPocket
    from envport.envs.tcg_pocket.jax_engine.bridge import TcgPocketBridge
"""
