"""``rules`` against the reference on the ``full`` pool: whole random games step by step
(mask and every state field, the generator included), every Trainer (Koga too) played from
states of such games, every attack of every template from such states with each answer to the
choice it asks, fossils (played, evolved, discarded), Sabrina's choice, Blaine's bonus."""

import jax
import jax.numpy as jnp
import numpy as np
from translation import config, rules
from translation import state as S
from translation.tests.refgames import TRAINERS, main_states, ready_for, reference, with_card

from envport.envs.tcg_pocket.actions import ATTACK, DISCARD, PLAY, SLOTS
from envport.envs.tcg_pocket.cards import ENERGY_INDEX, load_table
from envport.envs.tcg_pocket.deck import full_pokemon, status_pokemon
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


TABLE = load_table()


def chain(name: str) -> list[int]:
    names = [name]
    while TABLE[names[0]].evolves_from is not None:
        names.insert(0, str(TABLE[names[0]].evolves_from))
    return [CARD_ID[n] for n in names] + [0] * (3 - len(names))


def attack_ready(state: dict, name: str, j: int, k: int) -> dict:
    """``state`` with the player to move's Active ``name`` (its whole line), the Energy its
    attack ``j`` costs (and ``k % 3`` more of its type), no conditions or attack effects, a
    damaged opposing Active; ``k`` varies the numbers."""
    s = {key: np.array(v, copy=True) for key, v in state.items()}
    p = int(s["current"])
    c = TABLE[name]
    s["stack"][p, 0] = chain(name)
    s["energy"][p, 0] = 0
    for symbol in c.attacks[j].cost:
        s["energy"][p, 0, ENERGY_INDEX.get(symbol, ENERGY_INDEX.get(str(c.type), 0))] += 1
    s["energy"][p, 0, ENERGY_INDEX.get(str(c.type), 0)] += k % 3
    s["conditions"][p, 0] = False
    s["effect_until"][p, 0] = -1
    s["effect_amount"][p, 0] = 0
    s["damage"][p, 0] = 10 * (k % 2)
    s["damage"][1 - p, 0] = 10 * (k % 3)
    s["rng"] = np.array([s["rng"][0], s["rng"][1] + np.uint32(31 * k)], np.uint32)
    return s


def test_every_attack_of_the_full_pool_from_states_of_games():
    """Each attack with an effect outside the ``status`` pool's, from 4 states each; a choice
    the attack asks for is answered with each legal answer."""
    ref = reference()
    states = [s for s in main_states(3, seed=5, every=3) if int(s["turn"]) > 2][:16]
    new = sorted(set(full_pokemon()) - set(status_pokemon()))
    seen: dict[str, int] = {}
    for n, name in enumerate(new):
        for j, a in enumerate(TABLE[name].attacks if TABLE[name].is_pokemon else ()):
            if a.effect is None:
                continue
            for k in range(4):
                s = attack_ready(states[(4 * n + k) % len(states)], name, j, k)
                ref.set_state(s)
                s = ref.get_state()
                mask = ref.action_mask()
                assert np.array_equal(np.asarray(MASK(S.from_arrays(s))), mask), name
                if not mask[ATTACK + j]:
                    continue
                step_both(ref, s, ATTACK + j)
                after = ref.get_state()
                seen[a.effect["template"]] = seen.get(a.effect["template"], 0) + 1
                if int(after["pending_kind"][0]) >= 0 and int(after["stage"]) != 4:
                    answers = ref.action_mask()
                    assert np.array_equal(np.asarray(MASK(S.from_arrays(after))), answers)
                    for choice in np.flatnonzero(answers):
                        step_both(ref, after, int(choice))
    templates = {a.effect["template"] for name in new for a in TABLE[name].attacks
                 if a.effect is not None}
    assert set(seen) == templates  # every template was attacked with


def test_fossils_played_evolved_and_discarded():
    ref = reference()
    st = next(s for s in main_states(2, seed=9, every=2) if int(s["turn"]) > 2)
    p = int(st["current"])
    for fossil, evolution in (("Helix Fossil", "Omanyte"), ("Dome Fossil", "Kabuto")):
        s = with_card(st, fossil)
        s["stack"][p, 1:] = 0
        s["energy"][p, 1:] = 0
        s["damage"][p, 1:] = 0
        step_both(ref, s, PLAY)  # to the Bench
        played = ref.get_state()
        s = {k: np.array(v, copy=True) for k, v in played.items()}
        s["entered_turn"][p, 1] = int(s["turn"]) - 2
        s["hand"][p, 0] = CARD_ID[evolution]
        step_both(ref, s, PLAY + 1)  # onto the fossil
        step_both(ref, played, DISCARD + 1)  # the Benched fossil discarded
        s = {k: np.array(v, copy=True) for k, v in played.items()}
        s["stack"][p, 0], s["stack"][p, 1] = played["stack"][p, 1], played["stack"][p, 0]
        s["stack"][p, 2] = played["stack"][p, 0]
        for key in ("energy", "damage", "conditions", "effect_until", "effect_amount"):
            s[key][p, 0] = played[key][p, 1]
        ref.set_state(s)
        assert np.array_equal(np.asarray(MASK(S.from_arrays(s))), ref.action_mask())
        step_both(ref, s, DISCARD)  # the Active fossil: a promotion to choose
        after = ref.get_state()
        assert int(after["pending_kind"][0]) == 1
        for choice in np.flatnonzero(ref.action_mask()):
            step_both(ref, after, int(choice))
