"""``rules`` against the reference on the ``trainers`` pool: whole random games step by step
(mask and every state field, the generator included), every Trainer played from states of
such games, Sabrina's choice, Blaine's bonus."""

import jax
import jax.numpy as jnp
import numpy as np
from translation import config, rules
from translation import state as S
from translation.tests.refgames import TRAINERS, main_states, ready_for, reference, with_card

from envport.envs.tcg_pocket.actions import PLAY, SLOTS
from envport.envs.tcg_pocket.encode import CARD_ID

PARAMS = config.default_params()
STEP = jax.jit(lambda s, a: rules.apply(s, a, PARAMS))
MASK = jax.jit(rules.legal_mask)


def diff(got: S.State, want: dict) -> list[str]:
    g = S.to_arrays(got)
    return [k for k in want if not np.array_equal(g[k], want[k])]


def step_both(ref, state: dict, action: int) -> None:
    ref.set_state(state)
    start = ref.get_state()  # the reference's form of an edited state: both start from it
    ref.step(action)
    nxt, legal = STEP(S.from_arrays(start), jnp.int32(action))
    assert bool(legal)
    assert diff(nxt, ref.get_state()) == [], action


def test_random_games_in_lockstep():
    ref = reference()
    played = 0
    for seed in range(3):
        ref.reset(seed)
        s = S.from_arrays(ref.get_state())
        rng = np.random.default_rng(seed)
        for t in range(1000):
            mask = ref.action_mask()
            assert np.array_equal(np.asarray(MASK(s)), mask), (seed, t)
            a = int(rng.choice(np.flatnonzero(mask)))
            hand = ref.get_state()["hand"][ref.game.to_act()]
            if PLAY <= a < PLAY + 20 * SLOTS and int(hand[(a - PLAY) // SLOTS]) in TRAINER_IDS:
                played += 1
            _, _, done, _, _ = ref.step(a)
            s, legal = STEP(s, jnp.int32(a))
            assert bool(legal) and diff(s, ref.get_state()) == [], (seed, t)
            if done:
                break
        assert done
    assert played >= 5  # Trainers were played in these games


TRAINER_IDS = {CARD_ID[n] for n in TRAINERS}


def test_every_trainer_from_states_of_games():
    ref = reference()
    states = [s for s in main_states(3, seed=7, every=4) if int(s["turn"]) > 1][:12]
    for name in TRAINERS:
        cases = draws = 0
        for k, st in enumerate(states):
            s = ready_for(st, name, k)
            ref.set_state(s)
            mask = ref.action_mask()
            assert np.array_equal(np.asarray(MASK(S.from_arrays(s))), mask), name
            for a in np.flatnonzero(mask[PLAY:PLAY + SLOTS]) + PLAY:  # h = 0, any target
                step_both(ref, s, int(a))
                draws += int(ref.tape()["count"])
                cases += 1
        assert cases >= 3, name
        if name in ("Misty", "Poké Ball", "Red Card"):
            assert draws > 0, name  # the effect drew from the generator


def test_sabrina_asks_the_opponent_when_two_are_benched():
    ref = reference()
    for st in main_states(4, seed=11, every=2):
        o = 1 - int(st["current"])
        if int(st["turn"]) > 1 and (st["stack"][o, 1:, 0] > 0).sum() >= 2:
            break
    else:
        raise AssertionError("no state with two opposing Benched Pokémon")
    s = with_card(st, "Sabrina")
    s["played_supporter"][int(st["current"])] = False
    step_both(ref, s, PLAY)
    after = ref.get_state()
    assert int(after["pending_kind"][0]) == 2 and int(after["pending_player"][0]) == o
    choice = int(np.flatnonzero(ref.action_mask())[-1])
    step_both(ref, after, choice)


def test_blaine_adds_30_to_magmar():
    ref = reference()
    st = main_states(1, seed=3)[0]
    p = int(st["current"])
    hits = []
    for blaine in (False, True):
        s = {k: np.array(v, copy=True) for k, v in st.items()}
        s["stack"][p, 0] = [CARD_ID["Magmar"], 0, 0]
        s["energy"][p, 0] = 0
        s["energy"][p, 0, 1] = 2  # Fire, Fire: Magma Punch, 50
        s["conditions"][p, 0] = False
        s["stack"][1 - p, 0] = [CARD_ID["Onix"], 0, 0]  # 110 HP, weak to Grass
        s["damage"][1 - p, 0] = 0
        s["giovanni"][p] = False
        s["blaine"][p] = blaine
        step_both(ref, s, 1)
        hits.append(int(ref.get_state()["damage"][1 - p, 0]))
    assert hits == [50, 80]
