"""The observation a Showdown client builds (``client.ClientRecord``: its requests and its own
player stream of the protocol) equals the engine's observation function on the bridged
``toJSON`` state (which shows the opponent as a client knows it), and so does the observation of
that state written in the client's form by ``client.client_view``, at every decision of real
Showdown battles. The player streams are cut from the worker's log as ``BattleStream``
cuts them (``|split|``: the secret half to its side, the public half to the other), and each
request is fed before that step's log, the order a server sends them in. The heuristic player
of ``envport play`` (from the record alone) chooses what ``agents.heuristic_showdown`` chooses
from the worker's state."""

from __future__ import annotations

import numpy as np
import pytest

from envport.envs.pokemon_gen1 import agents as A
from envport.envs.pokemon_gen1 import client as C
from envport.envs.pokemon_gen1 import env as V
from envport.envs.pokemon_gen1 import play as P
from envport.envs.pokemon_gen1 import spec_support as SS


def _feed(records: list[C.ClientRecord], last: dict) -> None:
    for p, rec in zip(C.SIDES, records, strict=True):
        req = (last.get("requests") or {}).get(p)
        if req:
            rec.request(req)
        rec.lines(C.player_lines(last["log"], p))


@pytest.mark.parametrize("seed", [9, 22, 31, 57])  # Transform, Mimic, Ditto's copied stages
def test_client_observation_equals_engine_observation(worker, seed):
    ref = V.ShowdownReference(worker)
    rng = np.random.default_rng(seed)
    ref.reset(seed)
    records = [C.ClientRecord("p1"), C.ClientRecord("p2")]
    _feed(records, ref.battle.last)
    decisions = 0
    client_heuristic = P.heuristic_policy()
    for _ in range(400):
        st = ref.get_state()
        if st["battle.ended"]:
            break
        engine = SS.observe(st, st["mask"], np)
        for p in (0, 1):
            got = records[p].observe()
            bad = np.flatnonzero(engine[p] != got)
            assert bad.size == 0, (f"seed {seed} turn {int(st['battle.turn'])} player {p}: "
                                   f"observation entries {bad.tolist()} differ")
            # the loop-written client form gives the same row (an independent writing of it)
            viewed = SS.observe(C.client_view(st, p), st["mask"], np)[p]
            np.testing.assert_array_equal(viewed, engine[p])
            np.testing.assert_array_equal(records[p].mask(), st["mask"][p])
            decisions += 1
        # the heuristic for p1 (it switches and attacks), random legal for p2
        heur = A.heuristic_showdown((ref.battle.last.get("requests") or {}).get("p1"),
                                    ref.battle.state(), 0)
        # the heuristic as `envport play` runs it, from the client's record only
        assert client_heuristic(records[0]) == heur, f"seed {seed} turn {int(st['battle.turn'])}"
        ref.step(np.array([heur, A.pick_legal(rng.integers(0, A.RANDOM_MODULUS),
                                              st["mask"][1])]))
        _feed(records, ref.battle.last)
    assert decisions > 20
    ref.close()


def test_client_view_hides_what_a_client_cannot_know(worker):
    ref = V.ShowdownReference(worker)
    ref.reset(3)
    ref.step(np.array([0, 0]))
    st = ref.get_state()
    view = C.client_view(st, 0)
    slot = int(view["active.slot"][1])
    hp = int(st["team.hp"][1, int(st["active.slot"][1])])
    mx = int(st["team.maxhp"][1, int(st["active.slot"][1])])
    assert int(view["team.maxhp"][1, slot]) == 100
    assert int(view["team.hp"][1, slot]) == C.showdown_percent(hp, mx)
    assert not view["seen"][1, 1:].any()  # only the lead was seen, now in slot 0
    ref.close()


def test_showdown_percent_matches_the_protocol():
    # the values of this module's worker log: 15/212 shown as 8/100, 166/240 as 70/100
    assert C.showdown_percent(15, 212) == 8
    assert C.showdown_percent(166, 240) == 70
    assert C.showdown_percent(239, 240) == 99
    assert C.showdown_percent(1, 700) == 1
    assert C.showdown_percent(0, 240) == 0


def test_player_lines_split_secret_and_public_halves():
    log = ["|split|p1", "|-damage|p1a: Kingler|166/240", "|-damage|p1a: Kingler|70/100",
           "|turn|2"]
    assert C.player_lines(log, "p1") == ["|-damage|p1a: Kingler|166/240", "|turn|2"]
    assert C.player_lines(log, "p2") == ["|-damage|p1a: Kingler|70/100", "|turn|2"]


def test_record_refuses_another_sides_request():
    rec = C.ClientRecord("p1")
    with pytest.raises(ValueError, match="p2"):
        rec.request({"side": {"id": "p2", "pokemon": []}})
