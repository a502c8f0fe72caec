"""The JAX engine of Pokémon TCG Pocket, produced through envport's translation loop with the
manual agent, copied from the workspace (``translation/``) of the second run
(``envport translate --reference ...TcgPocketReference --reference-kwargs '{"pool": "plain"}'
--agent manual``; iteration 12, workspace commit ``c4b9cc95``; report ``docs/runs/tcg-plain/``;
the first run, ``docs/runs/tcg/``, verified the ``basic`` pool without evolutions). Changed
from the workspace: the imports, the card table's path, two annotations widened for mypy, one
``noqa`` and two docstrings rewrapped; no code. It covers the reference's ``plain`` pool:
``rules.py`` says what is and is not covered, the README's "JAX engine" section which layers
pass.

    from envport.envs.tcg_pocket.jax_engine.jax_env import TcgPocket
    from envport.envs.tcg_pocket.jax_engine.bridge import TcgPocketBridge
"""
