"""The registered ``tcg-pocket``: ``envport.make`` builds the JAX engine, the spec's legal and
scripted actions are legal on both sides and leave the verifier's reference where it was,
and its random events come out of each side's own generator."""

from __future__ import annotations

import jax
import numpy as np
import pytest

import envport
from envport.core.api import Environment
from envport.envs.tcg_pocket.jax_engine.bridge import TcgPocketBridge
from envport.envs.tcg_pocket.jax_engine.jax_env import TcgPocket


@pytest.fixture(scope="module")
def spec():
    return envport.spec("tcg-pocket")


def test_registered_and_made(spec):
    assert "tcg-pocket" in envport.list_envs()
    env = envport.make("tcg-pocket")
    assert isinstance(env, TcgPocket) and isinstance(env, Environment)
    assert spec.status.startswith("verified") and "'full' pool" in spec.summary
    ref = spec.make_reference()
    assert ref.pool == "full"  # every card the reference plays
    assert isinstance(spec.make_bridge(), TcgPocketBridge)


def test_legal_and_scripted_actions_are_legal_on_both_sides(spec):
    v = spec.verification
    mask = jax.jit(TcgPocket().action_mask)
    bridge = spec.make_bridge()
    ref = spec.make_reference()
    rng = np.random.default_rng(5)
    checked = 0
    for seed in range(4):
        ref.reset(seed)
        done = False
        for _ in range(400):
            state = ref.get_state()
            want = ref.action_mask()
            jax_mask = np.asarray(mask(bridge.to_jax(state)))
            for policy in (v.legal_action, v.scripted_action):
                a = policy(state, rng)
                assert want[a] and jax_mask[a], (seed, policy, a)
                checked += 1
            # the policies ran on a reference of their own: this one did not move
            after = ref.get_state()
            assert all(np.array_equal(after[k], state[k]) for k in state)
            action = v.legal_action(state, rng) if seed % 2 else v.scripted_action(state, rng)
            _, _, done, _, _ = ref.step(action)
            if done:
                break
        assert done, f"seed {seed}: no end in 400 actions"
    assert checked > 100
    with pytest.raises(ValueError, match="over"):
        v.legal_action(ref.get_state(), rng)


def test_random_events_each_side_its_own(spec):
    v = spec.verification
    ref, ours = v.sample_reference_events(200, 3), v.sample_translation_events(200, 4)
    assert set(ref) == set(ours) == {"first_player", "coin", "energy_roll", "shuffle_place"}
    for name in ref:
        assert len(ref[name]) == len(ours[name]) == 200
        # independent draws, not one generator replayed on both sides
        assert not np.array_equal(ref[name], ours[name]), name
    # the 20-card shuffle moves card 0 everywhere, and the Energy roll covers all 3 types
    assert set(ref["shuffle_place"]) == set(ours["shuffle_place"]) == set(range(20))
    assert set(ref["energy_roll"]) == set(ours["energy_roll"]) == {0, 1, 2}


def test_the_benchmarks_reference_loop_plays_whole_games(monkeypatch):
    from envport.envs.tcg_pocket import spec_support

    dealt = []
    real = spec_support.derive_seed

    def counting(seed: int, i: int) -> int:
        dealt.append(i)
        return real(seed, i)

    monkeypatch.setattr(spec_support, "derive_seed", counting)
    steps, seconds = spec_support._play(0, 3, 400)  # raises on an illegal action
    assert steps == 400 and seconds > 0
    assert max(dealt) >= 3  # games ended and were dealt again inside the timed loop


def test_perturbed_l2_states_are_states_the_reference_plays_on(spec):
    """L2's extra state source: each perturbed state of a game in progress is accepted by the
    reference (it steps every legal action from it), differs from the visited state, and the
    attack-ready Active can use an attack (the templates random play seldom reaches)."""
    from envport.envs.tcg_pocket import spec_support as S
    from envport.envs.tcg_pocket.actions import ATTACK
    from envport.envs.tcg_pocket.deck import pool_trainers
    from envport.envs.tcg_pocket.encode import CARD_ID

    trainer_ids = [CARD_ID[n] for n in pool_trainers()]
    ref, rng = spec.make_reference(), np.random.default_rng(3)
    changed = attack_ready = burned_or_confused = trainer_playable = 0
    for seed in range(3):
        ref.reset(seed)
        for _ in range(40):
            state = ref.get_state()
            mask = ref.action_mask()
            if not mask.any():
                break
            new = spec.verification.perturb(state, rng)
            if any(not np.array_equal(new[k], state[k]) for k in state):
                changed += 1
                probe = spec.make_reference()
                probe.set_state(new)
                legal = np.flatnonzero(probe.action_mask())
                assert len(legal) > 0
                for a in legal:  # every legal action plays from the perturbed state
                    probe.set_state(new)
                    probe.step(int(a))
                p = int(new["current"])
                ready = new["stack"][p, 0].tolist() in [st.tolist() for st, _ in S._attackers()]
                probe.set_state(new)
                attack_ready += int(ready and probe.action_mask()[[ATTACK, ATTACK + 1]].any())
                burned_or_confused += int(new["conditions"][:, 0, [1, 4]].any())
                hand = new["hand"][p]
                plays = np.flatnonzero(probe.action_mask()[14:94]) // 4
                trainer_playable += int(any(hand[h] in trainer_ids for h in plays))
            ref.set_state(state)
            ref.step(int(rng.choice(np.flatnonzero(mask))))
    assert changed >= 50 and attack_ready >= 10 and burned_or_confused >= 3, (
        changed, attack_ready, burned_or_confused)
    assert trainer_playable >= 10, trainer_playable  # a Trainer to play, in hand


def test_l1_components_cover_every_template_and_condition(spec):
    """``SPEC`` names one L1 check per attack template of the pool, per Special Condition, per
    Trainer and per fossil rule, the mask and reset checks: those ``components.py`` defines
    (they run under ``pytest -m slow``)."""
    from envport.envs.tcg_pocket.cards import load_table
    from envport.envs.tcg_pocket.components import CONDITIONS, components
    from envport.envs.tcg_pocket.deck import full_pokemon, full_trainers

    table = load_table()
    templates = {a.effect["template"] for n in full_pokemon() if table[n].is_pokemon
                 for a in table[n].attacks if a.effect is not None}
    assert len(templates) == 29  # every template the card table names
    want = {f"template:{t}" for t in templates} | {f"checkup:{c}" for c in CONDITIONS}
    want |= {"end:both_win", "mask:legal", "reset:deal", "reset:decks"}
    want |= {f"trainer:{table[n].effect}" for n in full_trainers()}
    want |= {"fossil:play", "fossil:evolve", "fossil:discard"}
    assert set(spec.verification.components) == want == set(components())
