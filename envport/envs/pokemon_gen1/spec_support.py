"""What both sides of ``pokemon-gen1``'s verification share: the flat state and the observation.

* :func:`flat_state`: a battle (numpy or JAX, any leading batch axes) and the ``seen`` mask as
  a flat ``{name: array}`` (the verifier's reference state), with every leaf the bridge's
  comparable view ignores set to its rest value (:func:`canonical`): a volatile's counters while
  the volatile is absent, sleep counters without sleep, the source of a status that is gone,
  PP of empty move slots, the active fields of a side with no active Pokemon, absent team slots.
  Equal flat states are equal ``bridge.comparable`` views (``tests/.../test_pokemon_env.py``
  checks it along real battles), and every field of one is a leaf of :class:`state.Battle`, so
  :func:`battle_of` rebuilds the JAX state from it.
* :func:`observe`: the two players' observations, each what that player's Showdown client
  holds: its own team fully, the opponent's in the client's form (:func:`as_client_sees`: seen
  Pokemon by species id, HP as Showdown's percentage, used moves by move id; nothing of the
  opponent's team order, exact HP or unused moves), their legal masks and the turn, as float32
  ``[2, OBS_SIZE]``. Written over ``xp`` (numpy for the Showdown side, where the inputs come
  from Showdown's export and requests; jax.numpy for the translation, where they come from the
  JAX state and ``engine.legal_mask``).
* :func:`mask_from_request`: Showdown's request -> the engine's 11 choice booleans.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from envport.envs.pokemon_gen1 import bridge as B
from envport.envs.pokemon_gen1 import create as C
from envport.envs.pokemon_gen1 import engine as E
from envport.envs.pokemon_gen1 import matchup as M
from envport.envs.pokemon_gen1 import moves as MV
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

# flags, species, level, hp; status; moves; pp; stats; types; team position (one-hot)
OWN_MON = 6 + N_STATUS + 4 + 4 + 5 + 2 + S.TEAM_SIZE
# seen, active, fainted, species, level, hp; status; used moves; types
OPP_MON = 6 + N_STATUS + 4 + 2
ACTIVE = 7 + N_VOL  # stages, volatiles
OBS_SIZE = (S.TEAM_SIZE * OWN_MON + ACTIVE + S.TEAM_SIZE * OPP_MON + ACTIVE + M.SIZE
            + E.N_CHOICES + 1)
MASK_OFFSET = OBS_SIZE - E.N_CHOICES - 1
# The observation's bounds: stages / 6 reach -1; the matchup columns' heuristic score reaches 4
# (matchup.features caps it at 4 score units), the turn / 1000 1.001 at the Endless Battle Clause
OBS_LOW, OBS_HIGH = -1.0, 4.0
# Where the opponent's part of a row starts and ends (its team, then its active's stages and
# volatiles), and where the matchup features (``matchup.features``) start.
OPP_OFFSET = S.TEAM_SIZE * OWN_MON + ACTIVE
OPP_END = OPP_OFFSET + S.TEAM_SIZE * OPP_MON + ACTIVE
MATCHUP_OFFSET = OPP_END

# Volatiles whose presence Showdown's protocol does not show a player (for either side): they
# start without a message of their own (``lockedmove`` of Thrash / Petal Dance, ``rage``,
# ``residualdmg`` of Toxic and Leech Seed, the partial-trapping trio, ``flinch``), or are a
# bookkeeping split of another (``invulnerability`` beside ``twoturnmove``).
HIDDEN_VOLATILES = ("partiallytrapped", "partialtrappinglock", "fakepartiallytrapped",
                    "lockedmove", "rage", "flinch", "residualdmg", "invulnerability")
HIDDEN_BITS = int(sum(S.VOLATILE_BIT[v] for v in HIDDEN_VOLATILES))
_SHOWN_BITS = np.uint32(~HIDDEN_BITS & 0xFFFFFFFF)

# The flat state's leaves one side's view reads, by their short name.
_SIDE_LEAVES = ("team.present", "team.species", "team.level", "team.hp", "team.maxhp",
                "team.status", "team.fainted", "team.moves", "team.pp", "team.maxpp",
                "team.stats", "team.types", "team.position", "active.slot", "active.boosts",
                "active.volatiles", "active.base_moves", "active.base_pp", "active.base_maxpp",
                "active.base_separate", "active.slot_virtual", "seen")
# Per team member, what the client's form moves with the member when it reorders the team.
_MEMBER_LEAVES = ("species", "level", "hp", "status", "fainted", "moves", "pp", "maxpp",
                  "types")


def _f(x: Any, xp: Any) -> Any:
    return xp.asarray(x).astype(np.float32)


def _scale(x: Any, n: int, xp: Any) -> Any:
    """``x / n`` as a float32 multiplication by the float32 reciprocal: XLA compiles a division by
    a constant into that multiplication, numpy would divide; this way both round alike."""
    return _f(x, xp) * np.float32(1.0 / n)


def _side(flat: Mapping[str, Any], s: int, xp: Any) -> dict[str, Any]:
    return {k.split(".")[-1]: xp.asarray(flat[k])[s] for k in _SIDE_LEAVES}


def _argsort(x: Any, xp: Any) -> Any:
    if xp is np:
        return np.argsort(x, kind="stable")
    return xp.argsort(x)  # jax.numpy sorts stably


def showdown_percent(hp: Any, maxhp: Any, xp: Any = np) -> Any:
    """The HP a player sees of the opponent (``Pokemon.getHealth`` under Showdown's HP
    Percentage Mod): ``ceil(100 hp / maxhp)``, 99 while below full, 0 when fainted."""
    hp = xp.asarray(hp).astype(np.int32)
    mx = xp.maximum(xp.asarray(maxhp).astype(np.int32), 1)
    pct = (100 * hp + mx - 1) // mx
    return xp.where(hp <= 0, 0, xp.where((pct == 100) & (hp < mx), 99, pct)).astype(np.int32)


def as_client_sees(o: Mapping[str, Any], xp: Any = np) -> dict[str, Any]:
    """One side's view leaves (:func:`_side`) as the OPPONENT's client holds them
    (``client.client_view`` writes the same form into a whole flat state, with a loop): the
    seen Pokemon in slots 0.. by species id (the original order is not shown); HP as Showdown's
    percentage of a ``maxhp`` of 100; the moves each used (``pp < maxpp``), base slots only
    (Transform's and Mimic's copies are not the Pokemon's own), in slots 0.. by move id with
    ``pp`` 0 of ``maxpp`` 1; hidden volatiles clear. Jittable (``xp`` = jax.numpy)."""
    i32 = np.int32
    idx = xp.arange(S.TEAM_SIZE)
    slot = xp.asarray(o["slot"]).astype(i32)
    shown = xp.asarray(o["present"], bool) & xp.asarray(o["seen"], bool)
    active = (idx == slot)[:, None]
    sep = xp.asarray(o["base_separate"], bool)[None, :]
    virt = xp.asarray(o["slot_virtual"], bool)[None, :]

    def base(key: str) -> Any:
        row = xp.asarray(o[key]).astype(i32)
        return xp.where(active & sep, xp.asarray(o["base_" + key]).astype(i32)[None, :],
                        xp.where(active & virt, 0, row))

    moves, pp, maxpp = base("moves"), base("pp"), base("maxpp")
    used = (moves > 0) & (pp < maxpp)
    by_id = xp.sort(xp.where(used, moves, 1 << 16), axis=-1)
    moves = xp.where(by_id < (1 << 16), by_id, 0)
    member = {k: xp.asarray(o[k]) for k in _MEMBER_LEAVES}
    member.update(moves=moves, pp=xp.zeros_like(moves), maxpp=(moves > 0).astype(i32),
                  hp=showdown_percent(o["hp"], o["maxhp"], xp))
    order = _argsort(xp.where(shown, xp.asarray(o["species"]).astype(i32), 1000 + idx), xp)
    kept = idx < shown.sum()
    out = {k: xp.where(kept.reshape((-1,) + (1,) * (v.ndim - 1)), v[order], xp.zeros_like(v))
           for k, v in member.items()}
    here = (order == slot) & kept
    out.update(present=kept, seen=kept, maxhp=xp.where(kept, 100, 0).astype(i32),
               slot=xp.where(here.any(), xp.argmax(here), -1).astype(i32),
               boosts=xp.asarray(o["boosts"]),
               volatiles=xp.asarray(o["volatiles"]).astype(np.uint32) & _SHOWN_BITS)
    return out


def _side_view(o: Mapping[str, Any], own: bool, xp: Any) -> list[Any]:
    f32 = np.float32
    present = xp.asarray(o["present"], bool)
    slot = xp.asarray(o["slot"]).astype(np.int32)
    is_active = xp.arange(S.TEAM_SIZE) == slot
    fainted = xp.asarray(o["fainted"], bool)
    hp = _f(o["hp"], xp) / _f(xp.maximum(xp.asarray(o["maxhp"]).astype(np.int32), 1), xp)
    status = xp.asarray(o["status"]).astype(np.int32)
    status_1h = status[:, None] == xp.arange(N_STATUS)
    moves = xp.asarray(o["moves"]).astype(np.int32)
    pp = xp.asarray(o["pp"]).astype(np.int32)
    maxpp = xp.asarray(o["maxpp"]).astype(np.int32)
    shown = present if own else present & xp.asarray(o["seen"], bool)
    cols = [
        _f(shown, xp)[:, None], _f(is_active & present, xp)[:, None],
        _f(fainted & shown, xp)[:, None],
        _scale(xp.where(shown, xp.asarray(o["species"]).astype(np.int32), 0), 151, xp)[:, None],
        _scale(xp.where(shown, xp.asarray(o["level"]).astype(np.int32), 0), 100, xp)[:, None],
        xp.where(shown, hp, f32(0))[:, None],
        _f(status_1h & shown[:, None], xp),
    ]
    types = xp.where(shown[:, None], xp.asarray(o["types"]).astype(np.int32), 0)
    if own:
        # Showdown's current position: what ``switch N`` (choice SWITCH + N - 1) counts, so
        # a policy can tell which Pokemon each switch choice brings in. Own side only: the
        # opponent's order is not shown to the player.
        position = xp.asarray(o["position"]).astype(np.int32)
        cols += [_scale(moves, T.N_MOVES, xp), _f(pp, xp) / _f(xp.maximum(maxpp, 1), xp),
                 _scale(o["stats"], 1000, xp), _scale(types, T.N_TYPES, xp),
                 _f((position[:, None] == xp.arange(S.TEAM_SIZE)) & present[:, None], xp)]
    else:
        revealed = (moves > 0) & (pp < maxpp) & shown[:, None]
        cols += [_scale(xp.where(revealed, moves, 0), T.N_MOVES, xp),
                 _scale(types, T.N_TYPES, xp)]
    team = xp.concatenate(cols, axis=1).reshape(-1)
    boosts = _scale(o["boosts"], 6, xp)
    vol = xp.asarray(o["volatiles"]).astype(np.uint32) & _SHOWN_BITS
    bits = _f((vol >> xp.arange(N_VOL, dtype=np.uint32)) & np.uint32(1), xp)
    return [team, boosts, bits]


def observe(flat: Mapping[str, Any], masks: Any, xp: Any = np) -> Any:
    """``float32[2, OBS_SIZE]``: player p's row is what p's Showdown client holds
    (``client.ClientRecord`` builds the same row from a real client's requests and protocol
    stream): its own side complete (team in original order, every field, with each member's
    current position one-hot; its active's stages and volatiles), the opponent's side as the
    client sees it (:func:`as_client_sees`: seen Pokemon by species id, HP as Showdown's
    percentage, used base moves by move id, status, fainted, types; its active's stages and
    announced volatiles), p's legal mask (``masks[p]``) and turn / 1000. The volatiles Showdown
    does not announce (:data:`HIDDEN_VOLATILES`) are left out on both sides. Before the mask:
    the matchup of p's team and move slots against the opposing active
    (:func:`matchup.features`, a function of the two views above, so a client computes the
    same from what it holds)."""
    return xp.stack([observe_player(flat, masks, p, xp) for p in (0, 1)]).astype(np.float32)


def observe_player(flat: Mapping[str, Any], masks: Any, p: int, xp: Any = np) -> Any:
    """Row ``p`` of :func:`observe` alone (``float32[OBS_SIZE]``, the same operations)."""
    turn = _scale(xp.asarray(flat["battle.turn"]), 1000, xp).reshape(1)
    mine, theirs = _side(flat, p, xp), as_client_sees(_side(flat, 1 - p, xp), xp)
    parts = (_side_view(mine, True, xp) + _side_view(theirs, False, xp)
             + [M.features(mine, theirs, xp), _f(xp.asarray(masks)[p], xp), turn])
    return xp.concatenate(parts).astype(np.float32)


# ---- L2's perturb hook ---------------------------------------------------------------------------

# Counters of the active's volatiles a perturbation may move, with the values Showdown can hold
# at a move request (``data/mods/gen1``: confusion random(2, 6), Disable random(1, 9),
# Thrash/Petal Dance and Bide random(2, 4), each counted down to 1 before it ends; Toxic's
# counter grows by one a turn).
COUNTERS: dict[str, tuple[str, int, int]] = {
    "confusion_time": ("confusion", 1, 5), "disable_time": ("disable", 1, 8),
    "locked_time": ("lockedmove", 1, 3), "bide_time": ("bide", 1, 3),
    "toxic_counter": ("residualdmg", 1, 15), "bide_damage": ("bide", 0, 400),
}
PERTURBATIONS = ("hp", "status", "sleep", "stages", "pp", "counters", "substitute", "prng",
                 "no_pp", "volatile", "move", "stalemate", "disable")
# Volatiles an active may hold with no data of their own (``bridge.VOLATILE_FIELDS``: {}), which
# the ``volatile`` perturbation sets or clears: random players rarely use Mist or the screens
# while the foe's move would meet them.
PLAIN_VOLATILES = ("mist", "focusenergy", "reflect", "lightscreen", "leechseed")
# An active holding one of these refers to a move of its own (the locked or charged move, the
# disabled slot, Rage, Bide, the trapping move): the ``move`` perturbation leaves its moves alone.
MOVE_BOUND = sum(S.VOLATILE_BIT[v] for v in (
    "lockedmove", "twoturnmove", "disable", "rage", "bide", "partialtrappinglock"))
NEW_MOVES = np.flatnonzero(MV.SUPPORTED & (np.arange(len(MV.SUPPORTED))
                                             != S.MOVE_ID["struggle"]))
_PERTURB_REF: list[Any] = []  # the perturbations' own Showdown reference (one per process)


def stage_settable(b: S.Battle, s: int, i: int) -> bool:
    """Whether stage ``i`` of side ``s``'s active can be written alone (:func:`set_stage`): not a
    stat under its own paralysis (Speed) or burn (Attack) penalty, nor a Transform's stats."""
    status = int(b.team.status[s, b.active.slot[s]])
    return not (i < 5 and (b.active.transformed[s] or (status == T.STATUS_PAR and i == 4)
                           or (status == T.STATUS_BRN and i == 0)))


def set_stage(b: S.Battle, s: int, i: int, stage: int) -> None:
    """Stage ``i`` of side ``s``'s active at ``stage``, with the stat that boost sets (a stat,
    not accuracy or evasion); where :func:`stage_settable` allows it."""
    b.active.boosts[s, i] = stage
    if i < 5:
        b.team.modified[s, b.active.slot[s], i] = stage_stat(b.active.stored[s, i], stage)


def stage_stat(stored: int, stage: int) -> int:
    """The stat a boost to ``stage`` leaves (``boostBy``: stored x the stage's ratio, capped at
    999 as after a boost; the user's own paralysis/burn penalty is dropped by it)."""
    from envport.envs.pokemon_gen1.mechanics import STAGE_NUM

    return min(max(int(stored) * int(STAGE_NUM[stage + 6]) // 100, 1), 999)


def perturb_once(b: S.Battle, kind: str, rng: np.random.Generator) -> bool:
    """Apply one perturbation of ``kind`` to ``b`` (numpy, in place); False when none applies.
    Each keeps the state one Showdown can hold at a move request: HP within 1..maxhp of a
    Pokemon standing, statuses of bench Pokemon (Sleep and Freeze Clause respected) and poison
    on or off the active, sleep counters within the start time, stages with their stat as a
    boost sets it, PP within 0..maxPP (not a Transform/Mimic slot), the active's volatile
    counters in their ranges, the Substitute's HP, the LCG seed, and an active with no PP left
    in any move (its request offers Struggle: a state random battles reach only late), a plain
    volatile set or cleared on an active (:data:`PLAIN_VOLATILES`), and one move of a standing
    Pokemon replaced by another supported move it does not know (full PP Ups, PP within
    1..maxPP): every move meets every state, which the sets of random battles do not allow.
    ``stalemate`` leaves every standing Pokemon of both sides with no PP: the state where Gen
    1's Endless Battle Clause is decided (``battle.endTurn``), which random players never reach;
    ``disable`` disables a move of an active as Disable does."""
    t, a = b.team, b.active
    standing = [(s, k) for s in range(2) for k in range(S.TEAM_SIZE)
                if t.present[s, k] and not t.fainted[s, k]]
    actives = [s for s in range(2) if a.slot[s] >= 0 and not t.fainted[s, a.slot[s]]]
    if kind == "hp" and standing:
        s, k = standing[rng.integers(len(standing))]
        t.hp[s, k] = rng.integers(1, int(t.maxhp[s, k]) + 1)
        return True
    if kind == "status" and standing:
        s, k = standing[rng.integers(len(standing))]
        if k == a.slot[s]:  # the active: poison on or off (no stat penalty, no counter)
            if t.status[s, k] not in (T.STATUS_NONE, T.STATUS_PSN):
                return False
            t.status[s, k] = T.STATUS_PSN if t.status[s, k] == T.STATUS_NONE else T.STATUS_NONE
            t.status_by_ally[s, k] = False
            return True
        others = [j for j in range(S.TEAM_SIZE) if j != k and t.present[s, j]]
        choices = [T.STATUS_NONE, T.STATUS_PSN, T.STATUS_BRN, T.STATUS_PAR]
        if not any(t.status[s, j] == T.STATUS_SLP and not t.status_by_ally[s, j] for j in others):
            choices.append(T.STATUS_SLP)  # Sleep Clause Mod: one foe-induced sleeper a side
        if not any(t.status[s, j] == T.STATUS_FRZ for j in others):
            choices.append(T.STATUS_FRZ)  # Freeze Clause Mod
        new = choices[rng.integers(len(choices))]
        if t.status[s, k] == T.STATUS_TOX or new == t.status[s, k]:
            return False
        t.status[s, k] = new
        t.status_by_ally[s, k] = False
        start = int(rng.integers(1, 8))
        t.sleep_start[s, k] = start if new == T.STATUS_SLP else 0
        t.sleep_turns[s, k] = int(rng.integers(1, start + 1)) if new == T.STATUS_SLP else 0
        return True
    if kind == "sleep":
        asleep = [(s, k) for s, k in standing if t.status[s, k] == T.STATUS_SLP]
        if not asleep:
            return False
        s, k = asleep[rng.integers(len(asleep))]
        t.sleep_turns[s, k] = rng.integers(1, max(int(t.sleep_start[s, k]), 1) + 1)
        return True
    if kind == "stages" and actives:
        s = actives[rng.integers(len(actives))]
        i = int(rng.integers(7))
        if not stage_settable(b, s, i):
            return False
        set_stage(b, s, i, int(rng.integers(-6, 7)))
        return True
    if kind == "pp":
        slots = [(s, k, i) for s, k in standing for i in range(S.N_MOVE_SLOTS)
                 if t.moves[s, k, i] and not (k == a.slot[s] and borrowed(a, s, i))]
        if not slots:
            return False
        s, k, i = slots[rng.integers(len(slots))]
        t.pp[s, k, i] = rng.integers(0, int(t.maxpp[s, k, i]) + 1)
        return True
    if kind == "counters":
        have = [(s, leaf) for s in actives for leaf, (vol, _, _) in COUNTERS.items()
                if int(a.volatiles[s]) & S.VOLATILE_BIT[vol]]
        if not have:
            return False
        s, leaf = have[rng.integers(len(have))]
        _, lo, hi = COUNTERS[leaf]
        getattr(a, leaf)[s] = rng.integers(lo, hi + 1)
        return True
    if kind == "substitute":
        subs = [s for s in actives if int(a.volatiles[s]) & S.VOLATILE_BIT["substitute"]]
        if not subs:
            return False
        s = subs[rng.integers(len(subs))]
        a.substitute_hp[s] = rng.integers(1, int(t.maxhp[s, a.slot[s]]) // 4 + 2)
        return True
    if kind == "prng":
        b.prng[:] = rng.integers(0, 1 << 32, b.prng.shape, dtype=np.uint64).astype(np.uint32)
        return True
    if kind == "no_pp" and actives:
        return empty_pp(b, actives[rng.integers(len(actives))])
    if kind == "stalemate":  # Struggle against Struggle: Gen 1's Endless Battle Clause decides
        return sum(empty_pp(b, s, k) for s, k in standing) > 0
    if kind == "disable" and actives:
        return disable(b, actives[rng.integers(len(actives))], rng)
    if kind == "volatile" and actives:
        s = actives[rng.integers(len(actives))]
        a.volatiles[s] ^= S.VOLATILE_BIT[PLAIN_VOLATILES[rng.integers(len(PLAIN_VOLATILES))]]
        return True
    if kind == "move" and standing:
        s, k = standing[rng.integers(len(standing))]
        known = replaceable_slots(b, s, k)
        if not known:
            return False
        unknown = np.setdiff1d(NEW_MOVES, t.moves[s, k])
        j, move = known[rng.integers(len(known))], int(unknown[rng.integers(len(unknown))])
        teach(b, s, k, j, move, rng)
        return True
    return False


def borrowed(a: S.Active, s: int, j: int) -> bool:
    """Move slot ``j`` of side ``s``'s active is Transform's or Mimic's (its PP is not the
    Pokemon's own)."""
    return bool(a.slot_virtual[s, j] or a.base_separate[s, j])


def replaceable_slots(b: S.Battle, s: int, k: int) -> list[int]:
    """The move slots of side ``s``'s Pokemon ``k`` that :func:`teach` may write: none of an
    active bound to a move of its own (:data:`MOVE_BOUND`) or transformed, never a Transform or
    Mimic slot."""
    a, t = b.active, b.team
    is_active = k == a.slot[s]
    if is_active and (int(a.volatiles[s]) & MOVE_BOUND or a.transformed[s]):
        return []
    return [j for j in range(S.N_MOVE_SLOTS) if t.moves[s, k, j] and not (
        is_active and borrowed(a, s, j))]


def empty_pp(b: S.Battle, s: int, k: int | None = None, keep: int = 0,
             rng: np.random.Generator | None = None) -> bool:
    """Side ``s``'s Pokemon ``k`` (default: the active) left with no PP in any move but
    ``keep`` of those with PP, drawn by ``rng`` (numpy, in place); False (nothing done) where
    the active has a Transform or Mimic slot, or no more than ``keep`` moves have PP."""
    if keep and rng is None:
        raise ValueError("empty_pp: keep > 0 needs an rng to draw the moves kept")
    a, t = b.active, b.team
    k = int(a.slot[s]) if k is None else k
    real = [i for i in range(S.N_MOVE_SLOTS) if t.moves[s, k, i]]
    virtual = k == a.slot[s] and any(borrowed(a, s, i) for i in real)
    with_pp = [i for i in real if t.pp[s, k, i]]
    if virtual or len(with_pp) <= keep:
        return False
    kept = set(rng.choice(with_pp, keep, replace=False).tolist()) if rng is not None else set()
    t.pp[s, k, [i for i in real if i not in kept]] = 0
    return True


def disable(b: S.Battle, s: int, rng: np.random.Generator, spare: int = -1, turns: int = 1
            ) -> bool:
    """Side ``s``'s active disabled as Disable leaves it (numpy, in place): a move slot with PP
    other than ``spare`` and not Transform's or Mimic's, for ``turns``..8 turns (``random(1, 9)``
    in ``disable.condition.onStart``); False (nothing done) where it is disabled already or no
    slot can be."""
    a, t = b.active, b.team
    k = int(a.slot[s])
    if int(a.volatiles[s]) & S.VOLATILE_BIT["disable"]:
        return False
    slots = [j for j in range(S.N_MOVE_SLOTS) if t.moves[s, k, j] and t.pp[s, k, j] and j != spare
             and not borrowed(a, s, j)]
    if not slots:
        return False
    j = slots[rng.integers(len(slots))]
    a.volatiles[s] |= S.VOLATILE_BIT["disable"]
    a.disable_time[s] = rng.integers(turns, 9)
    a.disable_slot[s], a.disable_move[s] = j, t.moves[s, k, j]
    return True


def teach(b: S.Battle, s: int, k: int, j: int, move: int, rng: np.random.Generator) -> None:
    """Slot ``j`` of side ``s``'s Pokemon ``k`` holds ``move`` (numpy, in place), with three PP
    Ups as ``create`` gives and 1..maxPP PP."""
    t = b.team
    t.moves[s, k, j] = move
    t.maxpp[s, k, j] = min(int(T.MOVE_PP[move]) * 8 // 5, C.MAX_PP_GEN1)
    t.pp[s, k, j] = rng.integers(1, int(t.maxpp[s, k, j]) + 1)


def take_back(ref: Any, b: S.Battle, seen: Any, template: Mapping[str, Any]
              ) -> dict[str, Any] | None:
    """``b`` written over ``template`` (its battle's Showdown JSON, ``export.to_showdown``) and
    injected into the Showdown reference ``ref`` (``Battle.fromJSON``, requests rebuilt): the
    flat state Showdown holds, or None where it refuses it or reads any field back changed."""
    from envport.envs.pokemon_gen1 import export as X
    from envport.envs.pokemon_gen1.reference import ShowdownError

    want = flat_state(b, seen, np)
    try:
        got = ref.load_json(X.to_showdown(b, template), seen)
    except (ShowdownError, ValueError):
        return None
    return got if all(np.array_equal(got[k], want[k]) for k in want) else None


def perturb(state: Mapping[str, Any], rng: np.random.Generator, tries: int = 20
            ) -> dict[str, Any]:
    """``Verification.perturb``: a visited state moved to a nearby one none of the policies
    visited, as Showdown holds it. One to three perturbations (:data:`PERTURBATIONS`) of the
    battle; at a forced switch or an ended battle only HP, PP and the LCG seed. The state is
    written over its own Showdown JSON (``export.to_showdown``), injected into Showdown
    (``Battle.fromJSON``, which rebuilds the requests) and read back: the result is what
    Showdown holds, masks from its requests, and it is kept only if every field equals the
    perturbed one (else another is drawn; after ``tries``, a new LCG seed alone)."""
    from envport.envs.pokemon_gen1 import env as ENV

    template = ENV.stored_json(state)
    if template is None:
        raise ValueError("perturb: the state was not produced by a Showdown reference of this "
                         "process (its JSON is the template of the perturbed one)")
    if not _PERTURB_REF:
        _PERTURB_REF.append(ENV.ShowdownReference())
    ref = _PERTURB_REF[0]
    base = battle_of(state, np)
    between_turns = not base.ended and not any(
        base.active.slot[s] >= 0 and base.team.fainted[s, base.active.slot[s]] for s in range(2))
    kinds = PERTURBATIONS if between_turns else ("hp", "pp", "prng")
    for attempt in range(tries + 1):
        b = jax_free_copy(base)
        if attempt < tries:
            chosen = rng.choice(len(kinds), size=min(int(rng.integers(1, 4)), len(kinds)),
                                replace=False)
            if not sum(perturb_once(b, kinds[i], rng) for i in chosen):
                continue
        else:
            perturb_once(b, "prng", rng)
        if all(np.array_equal(v, state[k]) for k, v in flat_state(b, state["seen"], np).items()):
            continue
        got = take_back(ref, b, state["seen"], template)
        if got is not None:
            return got
    raise ValueError("perturb: no perturbation Showdown accepts unchanged, not even a new seed")


def jax_free_copy(b: S.Battle) -> S.Battle:
    """A numpy copy of a battle (every leaf its own writable array)."""
    import jax

    return jax.tree_util.tree_map(lambda x: np.array(x, copy=True), b)
