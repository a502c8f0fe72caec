"""The Showdown worker and ShowdownBattle against the real pokemon-showdown under Node.

Skipped (with the reason) only where Node or the pinned package is missing; the project's set-up
installs both (envport/envs/pokemon_gen1/install_reference.sh).
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import textwrap

import numpy as np
import pytest

from envport.envs.pokemon_gen1.reference import (
    REFERENCE_DIR,
    IllegalChoice,
    ShowdownBattle,
    ShowdownWorker,
    WorkerCrashed,
    WorkerHung,
    find_node,
    gen1_set,
    legal_choices,
    seed_words,
)
from envport.envs.pokemon_gen1.render import render_state, render_turn


def random_policy(rng: random.Random, requests: dict) -> tuple:
    return tuple(rng.choice(c) if (c := legal_choices(requests[s])) else None
                 for s in ("p1", "p2"))


def play(worker: ShowdownWorker, battle_id: str, requests: dict, rng: random.Random,
         turns: int) -> tuple[list, list, dict]:
    """Up to ``turns`` random choices; the choices made, the results, the last requests."""
    choices, results = [], []
    for _ in range(turns):
        action = random_policy(rng, requests)
        result = worker.choose(battle_id, *action)
        choices.append(action)
        results.append(result)
        requests = result["requests"]
        if result["ended"]:
            break
    return choices, results, requests


def teams(worker: ShowdownWorker, seed: int) -> tuple[str, str]:
    t1, t2 = worker.generate_teams([seed_words(seed, 1), seed_words(seed, 2)])
    return t1, t2


# ---- battles, determinism, export/import ---------------------------------------------------

def test_a_battle_runs_to_the_end_and_reports_its_turns(worker):
    with ShowdownBattle(worker) as battle:
        requests = battle.reset(seed=3)
        assert battle.last["turn"] == 1 and not battle.last["ended"]
        assert requests["p1"]["side"]["id"] == "p1" and requests["p2"]["active"]
        rng = random.Random(0)
        for _ in range(2000):
            action = random_policy(rng, requests)
            requests, reward, terminated, truncated, info = battle.step(action)
            assert not any(line.startswith("|t:|") for line in info["log"])
            if terminated:
                break
        assert terminated and not truncated and info["winner"] in ("p1", "p2", "tie")
        assert reward == {"p1": 1.0, "p2": -1.0, "tie": 0.0}[info["winner"]]
        state = battle.state()
        assert state["ended"] and state["winner"] == info["winner"]
        arrays = battle.get_state()  # Showdown may leave status "fnt" on a fainted Pokemon
        for s in ("p1", "p2"):
            assert np.all(arrays[f"{s}.hp"][arrays[f"{s}.fainted"]] == 0)
            assert np.array_equal(arrays[f"{s}.fainted"],
                                  [p["fainted"] for p in state["sides"][int(s[1]) - 1]["pokemon"]])
        loser_sides = [s for s in state["sides"] if s["pokemon_left"] == 0]
        if info["winner"] != "tie":
            assert [s["id"] for s in loser_sides] == [{"p1": "p2", "p2": "p1"}[info["winner"]]]
            assert all(p["fainted"] and p["hp"] == 0 for p in loser_sides[0]["pokemon"])


def test_same_seed_and_choices_give_the_same_battle_and_tape(worker):
    t = teams(worker, 11)
    runs = []
    for k in range(2):
        bid = f"det-{k}"
        created = worker.create(bid, [9, 8, 7, 6], *t)
        runs.append(play(worker, bid, created["requests"], random.Random(5), 25))
        worker.destroy(bid)
    (c0, r0, _), (c1, r1, _) = runs
    assert c0 == c1
    assert [r["log"] for r in r0] == [r["log"] for r in r1]
    assert [r["tape"] for r in r0] == [r["tape"] for r in r1]
    assert sum(len(r["tape"]) for r in r0) > 25  # most turns draw (accuracy, crit, damage roll)


def test_export_import_continues_identically_with_the_tape_reattached(worker):
    t = teams(worker, 21)
    first = worker.create("orig", [100, 200, 300, 400], *t)
    _, _, requests = play(worker, "orig", first["requests"], random.Random(1), 8)
    exported = worker.export("orig")
    restored = worker.import_("copy", json.loads(json.dumps(exported)))
    assert restored["requests"] == requests
    assert restored["prng"] == worker.state("orig")["prng"]
    assert worker.state("copy") == worker.state("orig")
    rng = random.Random(2)
    draws = 0
    for _ in range(30):
        action = random_policy(rng, requests)
        a = worker.choose("orig", *action)
        b = worker.choose("copy", *action)
        assert a["log"] == b["log"]
        assert a["tape"] == b["tape"]  # the restored battle's new PRNG object is taped too
        assert a["prng"] == b["prng"] and a["requests"] == b["requests"]
        requests = a["requests"]
        draws += len(b["tape"])
        if a["ended"]:
            break
    assert draws > 0
    assert worker.state("copy") == worker.state("orig")
    worker.destroy("orig")
    worker.destroy("copy")


def test_tape_values_follow_showdowns_mapping(worker):
    result = worker.create("tape", [1, 2, 3, 4], *teams(worker, 5))
    _, results, _ = play(worker, "tape", result["requests"], random.Random(3), 20)
    draws = [d for r in results for d in r["tape"]]
    assert draws and [d["i"] for d in results[0]["tape"]] == list(range(len(results[0]["tape"])))
    for d in draws:
        assert d["api"] in ("random", "randomChance", "sample", "shuffle")
        u, lo, hi = d["raw"], d["from"], d["to"]
        if lo is None:
            assert d["result"] == u / 2**32
        elif hi is None:
            assert d["result"] == (u * lo) >> 32
        else:
            assert d["result"] == lo + ((u * (hi - lo)) >> 32)
    assert {d["api"] for d in draws} >= {"randomChance", "random"}
    worker.destroy("tape")


def test_get_state_set_state_round_trip(worker):
    with ShowdownBattle(worker) as battle:
        requests = battle.reset(seed=44)
        rng = random.Random(4)
        for _ in range(6):
            requests, *_ = battle.step(random_policy(rng, requests))
        saved = battle.get_state()
        assert saved["p1.hp"].shape == (6,) and saved["p1.boosts"].shape == (6, 7)
        assert saved["p1.hp"].dtype == np.int16 and saved["prng"].dtype == np.uint16
        action = random_policy(rng, requests)
        after = battle.step(action)[4]
        battle.set_state(saved)
        again = battle.step(action)[4]
        assert again["log"] == after["log"] and again["tape"] == after["tape"]
        edited = dict(saved)
        edited["p1.hp"] = saved["p1.hp"] + 1
        with pytest.raises(ValueError, match=r"p1\.hp"):
            battle.set_state(edited)


def test_team_generation_matches_showdowns_battle_built_teams(worker):
    # Battles given a player seed and no team build the team with Showdown's own generator;
    # p1's (the first drawn from that generator) must equal Teams.generate with the same seed.
    seeds = [[i, 2 * i + 1, 3 * i + 7, 40000 + i] for i in range(6)]
    script = textwrap.dedent("""
        const {Battle, Teams} = require('pokemon-showdown');
        const out = JSON.parse(process.argv[1]).map(seed => {
            const b = new Battle({formatid: 'gen1randombattle', seed: [1, 2, 3, 4]});
            b.setPlayer('p1', {name: 'p1', seed: seed.join(',')});
            b.setPlayer('p2', {name: 'p2', seed: '9,9,9,9'});
            return Teams.pack(b.p1.team);
        });
        process.stdout.write(JSON.stringify(out));
    """)
    out = subprocess.run([find_node(), "-e", script, json.dumps(seeds)], cwd=REFERENCE_DIR,
                         capture_output=True, text=True, timeout=120, check=True)
    assert worker.generate_teams(seeds) == json.loads(out.stdout)
    assert worker.generate_team(seeds[0]) != worker.generate_team(seeds[1])


def test_renderer_shows_the_turn_and_the_state(worker):
    t1 = worker.pack_team([gen1_set("Tauros", ["bodyslam"])])
    t2 = worker.pack_team([gen1_set("Chansey", ["splash"])])
    worker.create("render", [1, 2, 3, 4], t1, t2)
    text = render_turn(worker.choose("render", "move 1", "move 1"))
    # The spec's worked example: seed 1,2,3,4, hit 121 < 255, no crit (226 >= 55), R = 242.
    assert "|-damage|p2a: Chansey|424/703" in text
    assert "randomChance(256) raw=2030470262 -> 121" in text
    assert "random(217,256) raw=2851743046 -> 242" in text
    state = render_state(worker.state("render"))
    assert "*1 chansey L100  424/703" in state and "bodyslam:23" in state
    worker.destroy("render")


# ---- bad input -----------------------------------------------------------------------------

def sets(worker, *members):
    return worker.pack_team([gen1_set(*m) for m in members])


def test_illegal_choices_come_back_as_showdowns_rejection(worker):
    worker.create("bad", [1, 2, 3, 4], sets(worker, ("Rattata", ["tackle"], 5),
                                              ("Chansey", ["splash"])),
                  sets(worker, ("Mewtwo", ["psychic"])))
    cases = [(("switch 1", "move 1"), "p1", "can't switch to an active"),
             (("move 5", "move 1"), "p1", "doesn't have a move 5"),
             (("move 1", "switch 2"), "p2", "do not have a Pokémon in slot 2"),
             (("move 1", None), "p2", "must choose"),
             (("dance", "move 1"), "p1", "Unrecognized choice")]
    before, exported = worker.state("bad"), worker.export("bad")
    for action, side, message in cases:
        with pytest.raises(IllegalChoice) as err:
            worker.choose("bad", *action)
        assert err.value.side == side and message in err.value.showdown_message
        choice = dict(zip(("p1", "p2"), action, strict=True))[side]
        assert err.value.choice == choice and json.dumps(choice) in str(err.value)
        assert "seed [1, 2, 3, 4]" in str(err.value)
    assert worker.state("bad") == before  # a rejected pair changes nothing,
    assert worker.export("bad") == exported  # not even the half-made choice in toJSON
    result = worker.choose("bad", "move 1", "move 1")  # Mewtwo knocks Rattata out
    assert result["requests"]["p1"]["forceSwitch"] == [True]
    assert result["requests"]["p2"]["wait"]
    with pytest.raises(IllegalChoice, match="nothing to choose"):
        worker.choose("bad", "switch 2", "move 1")
    worker.choose("bad", "switch 2", None)
    with pytest.raises(IllegalChoice, match="can't switch to a fainted"):
        worker.choose("bad", "switch 2", "move 1")
    worker.destroy("bad")


def test_moves_without_pp_and_disabled_moves_are_rejected(worker):
    worker.create("pp", [1, 2, 3, 4], sets(worker, ("Rattata", ["hydropump", "splash"], 5)),
                  sets(worker, ("Chansey", ["splash"])))
    for _ in range(8):  # Hydro Pump: 5 PP, 8 with PP Ups
        result = worker.choose("pp", "move 1", "move 1")
    assert result["requests"]["p1"]["active"][0]["moves"][0]["pp"] == 0
    with pytest.raises(IllegalChoice, match="Hydro Pump is disabled"):
        worker.choose("pp", "move 1", "move 1")
    worker.destroy("pp")

    worker.create("dis", [1, 2, 3, 4], sets(worker, ("Chansey", ["tackle", "growl"])),
                  sets(worker, ("Chansey", ["disable"])))
    for _ in range(30):
        moves = worker.choose("dis", "move 1", "move 1")["requests"]["p1"]["active"][0]["moves"]
        disabled = [i for i, m in enumerate(moves) if m["disabled"]]
        if disabled:
            break
    assert disabled, "Disable never landed in 30 turns"
    with pytest.raises(IllegalChoice, match="is disabled"):
        worker.choose("dis", f"move {disabled[0] + 1}", "move 1")
    worker.destroy("dis")


def test_bad_requests_are_value_errors(worker):
    t = sets(worker, ("Tauros", ["bodyslam"]))
    with pytest.raises(ValueError, match=r"4 integers in 0\.\.65535"):
        worker.create("x", [1, 2, 3, 70000], t, t)
    with pytest.raises(ValueError, match="4 integers"):
        worker.generate_team([1, 2, 3])
    with pytest.raises(ValueError, match="team1"):
        worker.create("x", [1, 2, 3, 4], "", t)
    with pytest.raises(ValueError, match="no battle"):
        worker.choose("nope", "move 1", "move 1")
    with pytest.raises(ValueError, match="unknown op"):
        worker.call("frobnicate")


# ---- crash and hang ------------------------------------------------------------------------

def test_kill_9_restarts_the_worker_and_loses_no_battle(worker):
    rng = random.Random(7)
    starts, history = {}, {}
    for bid, seed, turns in (("k1", 31, 5), ("k2", 32, 7)):
        starts[bid] = (seed_words(seed, 0), teams(worker, seed))
        created = worker.create(bid, starts[bid][0], *starts[bid][1])
        history[bid] = play(worker, bid, created["requests"], rng, turns)
    pid, restarts = worker.pid, worker.restarts
    os.kill(pid, signal.SIGKILL)
    action = random_policy(rng, history["k1"][2])
    with pytest.raises(WorkerCrashed) as err:
        worker.choose("k1", *action)
    message = str(err.value)
    assert "crashed" in message and "battle 'k1'" in message
    assert f"seed {starts['k1'][0]}" in message and f"failing choices {list(action)}" in message
    assert worker.pid != pid and worker.restarts == restarts + 1
    # Both battles continue where they were, as if nothing had happened: replay from scratch in
    # fresh battles and compare the continuation.
    cont = {bid: play(worker, bid, history[bid][2], random.Random(bid), 10) for bid in history}
    for bid, (seed, t) in starts.items():
        worker.create(f"{bid}-replay", seed, *t)
        for choice in history[bid][0]:
            worker.choose(f"{bid}-replay", *choice)
        for choice, result in zip(cont[bid][0], cont[bid][1], strict=True):
            again = worker.choose(f"{bid}-replay", *choice)
            assert again["log"] == result["log"] and again["tape"] == result["tape"]
        worker.destroy(f"{bid}-replay")
        worker.destroy(bid)


def test_a_hung_request_is_killed_and_reported_with_its_battle(worker):
    t = teams(worker, 51)
    created = worker.create("h", [5, 6, 7, 8], *t)
    choices, _, requests = play(worker, "h", created["requests"], random.Random(8), 3)
    before = worker.state("h")
    action = random_policy(random.Random(9), requests)
    with pytest.raises(WorkerHung) as err:
        worker.request([{"op": "choose", "battle_id": "h", "p1": action[0], "p2": action[1],
                         "debug_delay_ms": 20000}], timeout=1.0)
    message = str(err.value)
    assert "hung" in message and "no reply within 1 s" in message
    assert "seed [5, 6, 7, 8]" in message and str([list(c) for c in choices]) in message
    assert worker.state("h") == before  # re-created, the hung choice not applied
    worker.choose("h", *action)
    worker.destroy("h")


def test_an_imported_battle_survives_a_restart(worker):
    created = worker.create("src", [3, 3, 3, 3], *teams(worker, 61))
    _, _, requests = play(worker, "src", created["requests"], random.Random(10), 4)
    worker.import_("imp", worker.export("src"))
    worker.destroy("src")
    _, _, requests = play(worker, "imp", requests, random.Random(11), 3)
    before = worker.state("imp")
    os.kill(worker.pid, signal.SIGKILL)
    with pytest.raises(WorkerCrashed, match="imported from toJSON"):
        worker.state("imp")
    assert worker.state("imp") == before
    worker.destroy("imp")


def test_reset_rng_keeps_the_tape_and_survives_a_restart(worker):
    from envport.envs.pokemon_gen1 import prng

    created = worker.create("rs", [1, 1, 1, 1], *teams(worker, 71))
    _, _, requests = play(worker, "rs", created["requests"], random.Random(12), 3)
    new_seed = [4660, 22136, 39612, 57072]
    assert worker.reseed("rs", new_seed)["prng"] == new_seed
    _, results, requests = play(worker, "rs", requests, random.Random(13), 4)
    raws = [d["raw"] for r in results for d in r["tape"]]
    assert raws, "no draws after resetRNG: the new PRNG object is not taped"
    # The draws after resetRNG are the new seed's stream, in order (envport's JAX PRNG agrees).
    expected = prng.raw_sequence(prng.seed_state(new_seed), len(raws))[1]
    assert raws == [int(u) for u in expected]
    before = worker.state("rs")
    os.kill(worker.pid, signal.SIGKILL)
    with pytest.raises(WorkerCrashed, match=r"resetRNG before choice k: \[\[3, \[4660"):
        worker.choose("rs", *random_policy(random.Random(14), requests))
    assert worker.state("rs") == before
    worker.destroy("rs")
