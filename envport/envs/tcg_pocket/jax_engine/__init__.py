"""The JAX engine of Pokémon TCG Pocket, produced through envport's translation loop with the
manual agent, copied from the workspace (``translation/``) of the third run
(``envport translate --reference ...TcgPocketReference --reference-kwargs '{"pool": "status"}'
--agent manual``; iteration 14, workspace commit ``dbc24064``; report ``docs/runs/tcg-status/``;
each module of the run started from this folder's module of the second run, ``plain`` pool,
``docs/runs/tcg-plain/``; the first run, ``docs/runs/tcg/``, verified the ``basic`` pool).
Changed from the workspace: the imports, the card table's path, one docstring rewrapped (the
second run's two annotations widened for mypy, one ``noqa`` and two docstrings rewrapped are
kept); no code. It covers the reference's ``status`` pool (and so the ``plain`` pool):
``rules.py`` says what is and is not covered, the README's "JAX engine" section which layers
pass.

    from envport.envs.tcg_pocket.jax_engine.jax_env import TcgPocket
    from envport.envs.tcg_pocket.jax_engine.bridge import TcgPocketBridge
"""
