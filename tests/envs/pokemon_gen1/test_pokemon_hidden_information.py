"""What a player's observation hides of the opponent: its exact HP within one of Showdown's
percentage steps, its team order, its moves not used yet. Two battle states that differ only
there give the same observation row, in numpy and in jax.numpy (jitted, vmapped); the side whose
own data changed sees the change (its own team is shown complete), and a change the client does
see (one percentage step of HP) changes the row. States are real Showdown states (the bridged
export, ``ShowdownReference``); the variants are edited copies of them."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from envport.envs.pokemon_gen1 import client as C
from envport.envs.pokemon_gen1 import env as V
from envport.envs.pokemon_gen1 import spec_support as SS
from envport.envs.pokemon_gen1 import state as S
from envport.envs.pokemon_gen1 import tables as T

OPP = 1  # the side whose hidden information changes; player 0 observes it


def _battle_with_two_seen(worker: Any) -> dict[str, np.ndarray]:
    """A real state, not ended, where player 0 has seen at least two of player 1's Pokemon."""
    ref = V.ShowdownReference(worker)
    rng = np.random.default_rng(5)
    try:
        for seed in (41, 42, 43):
            ref.reset(seed)
            for _ in range(150):
                st = ref.get_state()
                if st["battle.ended"]:
                    break
                if st["seen"][OPP].sum() >= 2 and int(st["battle.turn"]) >= 3:
                    return st
                ref.step(V.legal_action(st, rng))
    finally:
        ref.close()
    raise AssertionError("no battle showed two of player 1's Pokemon")


def _same_percent_hp(hp: int, maxhp: int) -> int | None:
    for other in range(1, maxhp + 1):
        if other != hp and C.showdown_percent(other, maxhp) == C.showdown_percent(hp, maxhp):
            return other
    return None


def _hide_differently(st: dict[str, np.ndarray]) -> tuple[dict[str, np.ndarray], list[str]]:
    """``st`` with player 1's exact HP moved within its percentage steps, two of its team
    members swapped (every team leaf, ``seen`` and the active slot follow), and an unused move of
    a bench member replaced by another move and its move slots reordered."""
    out = {k: np.array(v, copy=True) for k, v in st.items()}
    changed = []
    for k in np.flatnonzero(out["team.present"][OPP] & ~out["team.fainted"][OPP]):
        other = _same_percent_hp(int(out["team.hp"][OPP, k]), int(out["team.maxhp"][OPP, k]))
        if other is not None:
            out["team.hp"][OPP, k] = other
            changed.append(f"hp of member {k}")
    slot = int(out["active.slot"][OPP])
    bench = [k for k in range(S.TEAM_SIZE) if out["team.present"][OPP, k] and k != slot]
    # an unused move of a bench member (pp == maxpp): another move id, then the slots reversed
    for k in bench:
        moves, pp, maxpp = (out[f"team.{x}"][OPP, k] for x in ("moves", "pp", "maxpp"))
        unused = [i for i in range(S.N_MOVE_SLOTS) if moves[i] and pp[i] == maxpp[i]]
        if unused and (moves > 0).sum() >= 2:
            spare = next(m for m in range(1, T.N_MOVES) if m not in moves)
            moves[unused[0]] = spare
            n = int((moves > 0).sum())
            for x in ("moves", "pp", "maxpp"):
                out[f"team.{x}"][OPP, k, :n] = out[f"team.{x}"][OPP, k, :n][::-1].copy()
            changed.append(f"unused move and move order of member {k}")
            break
    i, j = slot, bench[0]  # the active and a bench member trade places in the team order
    for key in [k for k in out if k.startswith("team.")] + ["seen"]:
        out[key][OPP, [i, j]] = out[key][OPP, [j, i]]
    out["active.slot"][OPP] = j
    changed.append(f"team order (members {i} and {j})")
    return out, changed


def _jax_observe(states: list[dict[str, np.ndarray]]) -> np.ndarray:
    keys = [*SS.field_names()]
    batch = {k: jnp.stack([jnp.asarray(s[k]) for s in states]) for k in keys}
    masks = jnp.stack([jnp.asarray(s["mask"]) for s in states])
    fn = jax.jit(jax.vmap(lambda f, m: SS.observe(f, m, jnp)))
    return np.asarray(fn(batch, masks))


def test_hidden_information_does_not_reach_the_observation(worker) -> None:
    st = _battle_with_two_seen(worker)
    hidden, changed = _hide_differently(st)
    assert len(changed) >= 3, changed  # HP, an unused move and the team order all moved
    assert any(not np.array_equal(st[k], hidden[k]) for k in SS.field_names())
    a, b = SS.observe(st, st["mask"], np), SS.observe(hidden, st["mask"], np)
    np.testing.assert_array_equal(a[0], b[0], err_msg=f"player 0 sees {changed}")
    assert not np.array_equal(a[1], b[1])  # player 1's own side is shown complete
    ja, jb = _jax_observe([st, hidden])
    np.testing.assert_array_equal(ja, a)
    np.testing.assert_array_equal(jb, b)
    # a change the client is shown: the opponent's active one percentage step lower
    slot = int(st["active.slot"][OPP])
    hp, mx = int(st["team.hp"][OPP, slot]), int(st["team.maxhp"][OPP, slot])
    lower = next(x for x in range(hp - 1, 0, -1)
                 if C.showdown_percent(x, mx) != C.showdown_percent(hp, mx))
    hurt = {**st, "team.hp": st["team.hp"].copy()}
    hurt["team.hp"][OPP, slot] = lower
    assert not np.array_equal(SS.observe(hurt, st["mask"], np)[0], a[0])
