"""The JAX engine of Pokémon TCG Pocket, produced through envport's translation loop
(``envport translate --reference ...TcgPocketReference --reference-kwargs '{"pool": "basic"}'
--agent manual``), copied from the run's workspace (``translation/``, iteration 15, commit
``e58bc49c`` of the run's workspace; report: ``docs/runs/tcg/``) with only its imports and the
card table's path changed. It covers the reference's ``basic`` pool (plain Basic Pokémon):
see ``rules.py`` for what is and is not covered, and the README's "JAX engine" section for the
layers that pass.

    from envport.envs.tcg_pocket.jax_engine.jax_env import TcgPocket
    from envport.envs.tcg_pocket.jax_engine.bridge import TcgPocketBridge
"""
