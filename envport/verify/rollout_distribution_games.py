"""The rollout-distribution layer on the stochastic games: battle-level statistics under each
side's own random stream.

L2 and L3 verify ``pokemon-gen1`` and ``tcg-pocket`` draw for draw: the translation carries the
reference's generator (Showdown's Gen 5 LCG; the card game's counter-based generator) in its
state. This layer asks the other question: from seeds whose random stream the translation does
not reproduce, do whole games come out alike in distribution? Each side plays ``N`` games with
its own randomness (the reference: Showdown's default ChaCha20 "sodium" generator on seeds of
its own; the card game's reference: its own ``Rng`` from the episode seed; the translation: its
own resets from JAX keys, Gen 5 LCG words for Pokemon), both under random legal players
(``Verification.legal_action`` through ``policies.draw_action``), and the two samples of games
are compared on what a learner sees of a game: who won and how it ended (chi-square), its
length and return, and per-side statistics (faints, switches, damage dealt per turn, statuses
inflicted; points, damage, cards in hand and in play).

Each spec names its settings with ``Verification.rollout_distribution=lazy(...)`` of a function
here (the settings hold Showdown and JAX code: listing environments must not import them).
"""

from __future__ import annotations

import weakref
from collections.abc import Mapping
from typing import Any, cast

import numpy as np

from envport.core.reference import RefState
from envport.core.seeds import derive_seed
from envport.verify.rollout_distribution import Settings

# ---------------------------------------------------------------------------- pokemon-gen1
POKEMON_FEATURES = ("turn", "p1 fainted", "p2 fainted", "p1 hp", "p2 hp", "p1 statused",
                    "p2 statused", "p1 active", "p2 active")


def pokemon_features(state: RefState) -> np.ndarray:
    """A battle step's record (``POKEMON_FEATURES``) from the flat state (both sides' form):
    the turn; per side the Pokemon fainted, the HP fraction left summed over the team, the
    Pokemon with a non-volatile status, the active's team slot."""
    from envport.envs.pokemon_gen1 import tables as T

    present = np.asarray(state["team.present"], bool)
    fainted = np.asarray(state["team.fainted"], bool) & present
    hp = np.asarray(state["team.hp"], np.float64)
    maxhp = np.maximum(np.asarray(state["team.maxhp"], np.float64), 1.0)
    status = np.asarray(state["team.status"])
    statused = present & ~fainted & (status != T.STATUS_NONE) & (status != T.STATUS_FNT)
    left = np.where(present, hp / maxhp, 0.0).sum(-1)
    slot = np.asarray(state["active.slot"], np.float64)
    return np.asarray([float(np.asarray(state["battle.turn"])), *fainted.sum(-1), *left,
                       *statused.sum(-1), *slot], np.float64)


def _drops(x: np.ndarray) -> float:
    return float(np.clip(-np.diff(x), 0.0, None).sum()) if len(x) > 1 else 0.0


def _rises(x: np.ndarray) -> float:
    return float(np.clip(np.diff(x), 0.0, None).sum()) if len(x) > 1 else 0.0


def battle_summaries(rows: np.ndarray, names: list[str]) -> dict[str, float]:
    """One battle's statistics from its rows: turns; per side the Pokemon it lost, its
    switches (changes of its active: voluntary and after a faint), the damage it dealt per
    turn (the drops of the opponent's summed HP fraction, over the turns) and the statuses it
    inflicted (rises of the opponent's statused count)."""
    col = {n: rows[:, j] for j, n in enumerate(names)}
    turns = float(col["turn"][-1]) if len(rows) else 0.0
    out = {"turns": turns}
    for p, o in (("p1", "p2"), ("p2", "p1")):
        out[f"{p} fainted"] = float(col[f"{p} fainted"][-1]) if len(rows) else 0.0
        out[f"{p} switches"] = float(np.count_nonzero(np.diff(col[f"{p} active"])))
        out[f"{p} damage dealt per turn"] = _drops(col[f"{o} hp"]) / max(turns, 1.0)
        out[f"{p} statuses inflicted"] = _rises(col[f"{o} statused"])
    return out


def pokemon_outcome(state: RefState) -> str:
    from envport.envs.pokemon_gen1 import state as S

    w = int(np.asarray(state["battle.winner"]))
    return {S.WINNER_P1: "p1 wins", S.WINNER_P2: "p2 wins", S.WINNER_TIE: "tie"}.get(w, "none")


def sodium_seed(seed: int) -> str:
    """A Showdown ChaCha20 seed (``sodium,`` and 32 hex digits, the size of Showdown's own
    ``PRNG.generateSeed()``) derived from an episode seed."""
    return f"sodium,{derive_seed(seed, 0, 0) & (2**64 - 1):016x}" \
           f"{derive_seed(seed, 0, 1) & (2**64 - 1):016x}"


def make_pokemon_reference() -> Any:
    """Showdown dealing what the JAX reset deals, from its own random stream: both teams drawn
    uniformly from the committed pool (``create.TeamPool``, the JAX reset's population), each
    generated afresh by Showdown's ``Teams.generate`` from the pool entry's seed, and the battle
    seeded with a ChaCha20 ``sodium`` seed (Showdown's default generator; the translation's
    resets draw Gen 5 LCG words from JAX keys, so no battle of this reference is one of the
    translation's, although the engine can replay sodium battles, ``lockstep --prng sodium``).

    The flat state's ``battle.prng`` holds the LCG's four words, which a ChaCha20 battle does
    not have: it reads 0 here (no summary uses it), and ``set_state`` of such a state restores
    an LCG battle, so this reference is for this layer only."""
    import numpy as np

    from envport.envs.pokemon_gen1 import create as C
    from envport.envs.pokemon_gen1 import state as S
    from envport.envs.pokemon_gen1.env import ShowdownReference

    class PoolSodiumShowdown(ShowdownReference):
        def __init__(self) -> None:
            super().__init__()
            # A weak reference: a closure holding the battle would make a cycle, the battle
            # (and its Node worker) then freed only by the collector at interpreter exit,
            # where closing the worker aborts Python (env.py's _close_all says why).
            battle = weakref.ref(self.battle)

            def lcg_view() -> dict:
                b = battle()
                assert b is not None
                e = type(b).export(b)
                if str(e.get("prng", "")).startswith("sodium,"):
                    e = {**e, "prng": "0,0,0,0"}
                return e

            self.battle.export = lcg_view  # type: ignore[method-assign]

        def reset(self, seed: int) -> np.ndarray:
            pool = C.pool(True)
            picks = np.random.default_rng(derive_seed(seed, 1)).integers(0, len(pool), 2)
            w = self.battle.worker
            teams = (w.generate_team([int(x) for x in pool.seeds[picks[0]]]),
                     w.generate_team([int(x) for x in pool.seeds[picks[1]]]))
            # check_seed takes the sodium string too (Seed names the LCG's words only).
            self.battle.reset(teams=teams, battle_seed=cast(Any, sodium_seed(seed)))
            self._tape = list(self.battle.tape_records())
            self._refresh(np.zeros((2, S.TEAM_SIZE), bool))
            return self._obs()

    return PoolSodiumShowdown()


def pokemon_settings() -> Settings:
    """pokemon-gen1: 100 battles per side under random legal players; a battle ends by the
    Endless Battle Clause at turn 1000 at the latest."""
    return Settings(episodes=100, horizon=1100, windows=1, effect=0.8, policies=("random",),
                    step_features=pokemon_features, feature_names=POKEMON_FEATURES,
                    episode_summaries=battle_summaries, column_summaries=False,
                    termination_cause=pokemon_outcome, make_reference=make_pokemon_reference)


# ------------------------------------------------------------------------------ tcg-pocket
TCG_FEATURES = ("turn", "p0 points", "p1 points", "p0 damage", "p1 damage", "p0 hand",
                "p1 hand", "p0 in play", "p1 in play", "p0 deck", "p1 deck")


def tcg_features(state: Mapping[str, Any]) -> np.ndarray:
    """A game step's record (``TCG_FEATURES``): the turn; per player its points, the damage on
    its Pokemon in play, the cards in its hand, its Pokemon in play and the cards in its deck."""
    def count(x: Any) -> np.ndarray:
        return (np.asarray(x) > 0).reshape(2, -1).sum(-1)

    return np.asarray([float(np.asarray(state["turn"])),
                       *np.asarray(state["points"], np.float64),
                       *np.asarray(state["damage"], np.float64).sum(-1),
                       *count(state["hand"]), *count(np.asarray(state["stack"])[:, :, 0]),
                       *count(state["deck"])], np.float64)


def game_summaries(rows: np.ndarray, names: list[str]) -> dict[str, float]:
    """One game's statistics: turns; per player its final points, the damage it dealt (rises of
    the damage on the opponent's Pokemon: a knock-out clears it), its largest hand and its most
    Pokemon in play."""
    col = {n: rows[:, j] for j, n in enumerate(names)}
    out = {"turns": float(col["turn"][-1]) if len(rows) else 0.0}
    for p, o in (("p0", "p1"), ("p1", "p0")):
        out[f"{p} final points"] = float(col[f"{p} points"][-1]) if len(rows) else 0.0
        out[f"{p} damage dealt"] = _rises(col[f"{o} damage"])
        out[f"{p} largest hand"] = float(col[f"{p} hand"].max()) if len(rows) else 0.0
        out[f"{p} most in play"] = float(col[f"{p} in play"].max()) if len(rows) else 0.0
    return out


def tcg_outcome(state: Mapping[str, Any]) -> str:
    return (f"winner {int(np.asarray(state['winner']))}, end reason "
            f"{int(np.asarray(state['end_reason']))}")


def tcg_settings() -> Settings:
    """tcg-pocket: 100 games per side under random legal players (a game takes ~60 actions)."""
    return Settings(episodes=100, windows=1, effect=0.8, policies=("random",),
                    step_features=tcg_features, feature_names=TCG_FEATURES,
                    episode_summaries=game_summaries, column_summaries=False,
                    termination_cause=tcg_outcome)
