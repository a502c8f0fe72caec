"""The JAX engine of Pokémon TCG Pocket, produced through envport's translation loop with the
manual agent. Since the fourth run (``envport translate --reference ...TcgPocketReference
--reference-kwargs '{"pool": "trainers"}' --agent manual``; 13 iterations, workspace commit
``17295ee9``; report ``docs/runs/tcg-trainers/``) each module is that run's workspace module
(``translation/``) with the imports and the card table's path changed, plus one annotation
(``rules.EFFECTS``, for mypy). Each module of that run started from this folder's module of the
third run (``status`` pool, ``docs/runs/tcg-status/``), extended where the Trainers need it
(``cards``, ``rules``); the second run verified the ``plain`` pool, the first the ``basic``
pool. It covers the reference's ``trainers`` pool (and so the ``status`` and ``plain`` pools):
``rules.py`` says what is and is not covered, the README's "JAX engine" section which layers
pass.

    from envport.envs.tcg_pocket.jax_engine.jax_env import TcgPocket
    from envport.envs.tcg_pocket.jax_engine.bridge import TcgPocketBridge
"""
