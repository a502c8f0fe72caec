"""What both sides of ``pokemon-gen1``'s verification share: the flat state and the observation.

* :func:`flat_state`: a battle (numpy or JAX, any leading batch axes) and the ``seen`` mask as
  a flat ``{name: array}`` (the verifier's reference state), with every leaf the bridge's
  comparable view ignores set to its rest value (:func:`canonical`): a volatile's counters while
  the volatile is absent, sleep counters without sleep, the source of a status that is gone,
  PP of empty move slots, the active fields of a side with no active Pokemon, absent team slots.
  Equal flat states are equal ``bridge.comparable`` views (``tests/.../test_pokemon_env.py``
  checks it along real battles), and every field of one is a leaf of :class:`state.Battle`, so
  :func:`battle_of` rebuilds the JAX state from it.
* :func:`observe`: the two players' observations (own team fully, the opponent's as revealed:
  species seen active, moves whose PP went down, HP, status, stages and volatiles of the active),
  their legal masks and the turn, as float32 ``[2, OBS_SIZE]``. Written over ``xp`` (numpy for
  the Showdown side, where the inputs come from Showdown's export and requests; jax.numpy for the
  translation, where they come from the JAX state and ``engine.legal_mask``).
* :func:`mask_from_request`: Showdown's request -> the engine's 11 choice booleans.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from envport.envs.pokemon_gen1 import bridge as B
from envport.envs.pokemon_gen1 import engine as E
from envport.envs.pokemon_gen1 import state as S
from envport.envs.pokemon_gen1 import tables as T

GROUPS = ("team", "active", "side", "battle")
N_STATUS = len(T.STATUS_CODES)
N_VOL = len(S.VOLATILES)

# Active leaf -> the volatile whose counter it is (from the bridge's single table).
VOLATILE_OF_LEAF: dict[str, str] = {leaf: name for name, fields in B.VOLATILE_FIELDS.items()
                                    for leaf, _, _ in fields.values() if leaf is not None}


def field_names() -> list[str]:
    """The flat state's keys, in layout order (``team.hp``, ..., ``battle.prng``, ``seen``)."""
    return [f"{g}.{k}" for g in GROUPS for k in S.LAYOUT[g]] + ["seen"]


def _groups(b: S.Battle) -> dict[str, Any]:
    return {"team": b.team, "active": b.active, "side": b.side, "battle": b}


def canonical(b: S.Battle, xp: Any = np) -> dict[str, Any]:
    """``{group.leaf: array}`` of ``b`` with the leaves the comparable view ignores at rest."""
    t, a = b.team, b.active
    out: dict[str, Any] = {f"{g}.{k}": getattr(obj, k) for g, obj in _groups(b).items()
                           for k in S.LAYOUT[g]}
    present = xp.asarray(t.present)

    def zero_where(name: str, cond: Any) -> None:
        x = xp.asarray(out[name])
        cond = xp.asarray(cond)
        cond = cond.reshape(cond.shape + (1,) * (x.ndim - cond.ndim))
        out[name] = xp.where(cond, xp.zeros_like(x), x)

    status = xp.asarray(t.status)
    zero_where("team.pp", xp.asarray(t.moves) == 0)
    zero_where("team.maxpp", xp.asarray(t.moves) == 0)
    zero_where("team.sleep_turns", status != T.STATUS_SLP)
    zero_where("team.sleep_start", status != T.STATUS_SLP)
    zero_where("team.status_by_ally", status == T.STATUS_NONE)
    for k in S.LAYOUT["team"]:
        if k != "present":
            zero_where(f"team.{k}", ~present)
    slot = xp.asarray(a.slot).astype(np.int32)
    # the active's own move count: slot_virtual beyond it is not shown
    safe = xp.maximum(slot, 0)
    moves = xp.asarray(t.moves)
    active_moves = xp.take_along_axis(moves, safe[..., None, None], axis=-2)[..., 0, :]
    n_moves = (active_moves > 0).sum(-1)
    zero_where("active.slot_virtual", xp.arange(S.N_MOVE_SLOTS) >= n_moves[..., None])
    separate = xp.asarray(a.base_separate)
    for k in ("base_moves", "base_pp", "base_maxpp"):
        zero_where(f"active.{k}", ~separate)
    bits = xp.asarray(a.volatiles)
    for leaf, name in VOLATILE_OF_LEAF.items():
        zero_where(f"active.{leaf}", (bits & np.uint32(S.VOLATILE_BIT[name])) == 0)
    for k in S.LAYOUT["active"]:
        if k != "slot":
            zero_where(f"active.{k}", slot < 0)
    return out


def flat_state(b: S.Battle, seen: Any, xp: Any = np) -> dict[str, Any]:
    out = canonical(b, xp)
    out["seen"] = xp.asarray(seen, bool)
    return out


def battle_of(flat: Mapping[str, Any], xp: Any = np) -> S.Battle:
    """The battle whose :func:`canonical` leaves are ``flat`` (any leading batch axes)."""
    parts = {g: {k: xp.asarray(flat[f"{g}.{k}"], dtype) for k, (dtype, _) in S.LAYOUT[g].items()}
             for g in GROUPS}
    return S.Battle(team=S.Team(**parts["team"]), active=S.Active(**parts["active"]),
                    side=S.Side(**parts["side"]), **parts["battle"])


def seen_after(b: S.Battle, seen: Any, xp: Any = np) -> Any:
    """``seen`` plus each side's active Pokemon (revealed to the opponent by its switch-in)."""
    slot = xp.asarray(b.active.slot).astype(np.int32)
    return xp.asarray(seen, bool) | (xp.arange(S.TEAM_SIZE) == slot[..., None])


# ---- masks ---------------------------------------------------------------------------------------

def choice_index(choice: str | None) -> int:
    """``move N`` / ``switch N`` / None -> the engine's integer choice."""
    if choice is None:
        return E.NO_CHOICE
    kind, n = choice.split()
    return int(n) - 1 if kind == "move" else E.SWITCH + int(n) - 1


def mask_from_request(request: Mapping[str, Any] | None, ended: bool) -> np.ndarray:
    """Showdown's request of one side -> ``bool[11]`` as ``engine.legal_mask`` (a waiting side:
    only NO_CHOICE; an ended battle: nothing)."""
    from envport.envs.pokemon_gen1.reference import legal_choices

    mask = np.zeros(E.N_CHOICES, bool)
    if ended:
        return mask
    if not request or request.get("wait"):
        mask[E.NO_CHOICE] = True
        return mask
    for c in legal_choices(request, voluntary_switches=True):
        mask[choice_index(c)] = True
    return mask


def resolve(choices: Any, masks: Any, xp: Any = np) -> Any:
    """Each side's choice if its mask allows it; else the legal choice number ``c mod n`` (of
    its n legal ones, in choice order), NO_CHOICE when nothing is legal. The environment never
    hands Showdown a choice it would refuse, and uniformly random actions stay close to uniform
    over the legal ones (``envport bench``'s random actions)."""
    choices = xp.asarray(choices).astype(np.int32)
    masks = xp.asarray(masks, bool)
    c = xp.clip(choices, 0, E.N_CHOICES - 1)
    ok = (choices >= 0) & (choices < E.N_CHOICES) & xp.take_along_axis(
        masks, c[..., None], axis=-1)[..., 0]
    n = masks.sum(-1).astype(np.int32)
    k = xp.remainder(choices, xp.maximum(n, 1))
    rank = xp.cumsum(masks.astype(np.int32), axis=-1) - 1
    pick = xp.argmax(masks & (rank == k[..., None]), axis=-1).astype(np.int32)
    other = xp.where(n > 0, pick, E.NO_CHOICE)
    return xp.where(ok, c, other).astype(np.int32)


# ---- the observation -----------------------------------------------------------------------------

OWN_MON = 6 + N_STATUS + 4 + 4 + 5 + 2  # flags, species, level, hp; status; moves; pp; stats; types
OPP_MON = 6 + N_STATUS + 4  # seen, active, fainted, species, level, hp; status; revealed moves
ACTIVE = 7 + N_VOL  # stages, volatiles
OBS_SIZE = S.TEAM_SIZE * OWN_MON + ACTIVE + S.TEAM_SIZE * OPP_MON + ACTIVE + E.N_CHOICES + 1
MASK_OFFSET = OBS_SIZE - E.N_CHOICES - 1


def _f(x: Any, xp: Any) -> Any:
    return xp.asarray(x).astype(np.float32)


def _scale(x: Any, n: int, xp: Any) -> Any:
    """``x / n`` as a float32 multiplication by the float32 reciprocal: XLA compiles a division by
    a constant into that multiplication, numpy would divide; this way both round alike."""
    return _f(x, xp) * np.float32(1.0 / n)


def _side_view(flat: Mapping[str, Any], s: int, own: bool, seen: Any, xp: Any) -> list[Any]:
    f32 = np.float32
    present = xp.asarray(flat["team.present"])[s]
    slot = xp.asarray(flat["active.slot"])[s].astype(np.int32)
    is_active = xp.arange(S.TEAM_SIZE) == slot
    fainted = xp.asarray(flat["team.fainted"])[s]
    hp = _f(xp.asarray(flat["team.hp"])[s], xp) / _f(xp.maximum(
        xp.asarray(flat["team.maxhp"])[s].astype(np.int32), 1), xp)
    status = xp.asarray(flat["team.status"])[s].astype(np.int32)
    status_1h = status[:, None] == xp.arange(N_STATUS)
    moves = xp.asarray(flat["team.moves"])[s].astype(np.int32)
    pp = xp.asarray(flat["team.pp"])[s].astype(np.int32)
    maxpp = xp.asarray(flat["team.maxpp"])[s].astype(np.int32)
    shown = present if own else present & xp.asarray(seen)[s]
    cols = [
        _f(shown, xp)[:, None], _f(is_active & present, xp)[:, None],
        _f(fainted & shown, xp)[:, None],
        _scale(xp.where(shown, xp.asarray(flat["team.species"])[s].astype(np.int32), 0), 151,
               xp)[:, None],
        _scale(xp.where(shown, xp.asarray(flat["team.level"])[s].astype(np.int32), 0), 100,
               xp)[:, None],
        xp.where(shown, hp, f32(0))[:, None],
        _f(status_1h & shown[:, None], xp),
    ]
    if own:
        cols += [_scale(moves, T.N_MOVES, xp), _f(pp, xp) / _f(xp.maximum(maxpp, 1), xp),
                 _scale(xp.asarray(flat["team.stats"])[s], 1000, xp),
                 _scale(xp.asarray(flat["team.types"])[s], T.N_TYPES, xp)]
    else:
        revealed = (moves > 0) & (pp < maxpp) & shown[:, None]
        cols += [_scale(xp.where(revealed, moves, 0), T.N_MOVES, xp)]
    team = xp.concatenate(cols, axis=1).reshape(-1)
    boosts = _scale(xp.asarray(flat["active.boosts"])[s], 6, xp)
    vol = xp.asarray(flat["active.volatiles"])[s].astype(np.uint32)
    bits = _f((vol >> xp.arange(N_VOL, dtype=np.uint32)) & np.uint32(1), xp)
    return [team, boosts, bits]


def observe(flat: Mapping[str, Any], masks: Any, xp: Any = np) -> Any:
    """``float32[2, OBS_SIZE]``: player p's row is its own side (team in original order, every
    field), its active's stages and volatiles, the opponent's team as revealed to p (``seen``
    species; moves whose PP dropped; HP fraction, status, fainted of seen Pokemon), the
    opponent's active stages and volatiles, p's legal mask (``masks[p]``) and turn / 1000."""
    seen = xp.asarray(flat["seen"])
    turn = _scale(xp.asarray(flat["battle.turn"]), 1000, xp).reshape(1)
    rows = []
    for p in (0, 1):
        parts = (_side_view(flat, p, True, seen, xp) + _side_view(flat, 1 - p, False, seen, xp)
                 + [_f(xp.asarray(masks)[p], xp), turn])
        rows.append(xp.concatenate(parts))
    return xp.stack(rows).astype(np.float32)
