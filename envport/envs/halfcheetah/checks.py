"""L1 component checks: each stage of the JAX physics against C MuJoCo, in float64.

States come from real rollouts of Gymnasium's HalfCheetah-v5 under a random policy and a
"bounding" scripted policy, plus perturbations that produce what rollouts rarely reach: a torso
pushed into the floor or flipped (many contacts, the head and torso touching), joints driven past
their limits, large velocities, and controls outside ctrlrange (the clamp). For each state MuJoCo
computes the stage (mj_kinematics, mj_fullM, qfrc_bias, ...) and the JAX pipeline the same
quantity; a check raises ``AssertionError`` naming the quantity, the worst state and the error.

The JAX side runs under ``jax.enable_x64(True)`` (a context: nothing else in the process changes
precision) with float64 inputs, so the comparison is of the algorithm, not of float32 rounding.

With ``param_seed`` every state gets its own random params (``sample_params``: masses, inertias,
frictions, damping, armature, stiffness, gears, gravity): MuJoCo's model is edited to them state
by state, and the JAX side takes them as traced data, vmapped with the states.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import cache
from typing import Any, cast

import jax
import jax.numpy as jnp
import numpy as np

from envport.envs.halfcheetah import physics
from envport.envs.halfcheetah.model import cheetah_model, load_mj_model

RTOL = 1e-5  # the bar for every stage in float64 mode


@dataclass(frozen=True)
class Samples:
    qpos: np.ndarray   # (n, 9)
    qvel: np.ndarray   # (n, 9)
    ctrl: np.ndarray   # (n, 6)
    origin: tuple[str, ...]
    # Per state: the model params it is computed with (None: the compiled model's).
    params: tuple[dict[str, Any], ...] | None = None

    def __getitem__(self, index: slice) -> Samples:
        return Samples(self.qpos[index], self.qvel[index], self.ctrl[index], self.origin[index],
                       None if self.params is None else self.params[index])


def with_random_params(s: Samples, seed: int) -> Samples:
    """``s`` with a random model param set per state (``sample_params``)."""
    from envport.envs.halfcheetah import sample_params

    rng = np.random.default_rng(seed)
    model_names = tuple(physics.model_values(cheetah_model()))
    params = []
    for _ in range(len(s.qpos)):
        values = sample_params(rng)
        params.append({k: values[k] for k in model_names})
    return replace(s, params=tuple(params))


def bounding_policy(obs: np.ndarray, rng: np.random.Generator, t: int = 0) -> np.ndarray:
    """A gait-like open-loop policy (legs in antiphase at ~2 Hz) with noise: fast runs, hard
    landings, flips now and then - states a random policy rarely visits."""
    phase = 2 * np.pi * 0.1 * t
    a = np.array([np.sin(phase), np.sin(phase + 1), np.sin(phase + 2),
                  -np.sin(phase), -np.sin(phase + 1), -np.sin(phase + 2)])
    return np.clip(a + 0.3 * rng.normal(size=6), -1, 1)


def rollout_states(n: int, seed: int = 0, episode_len: int = 200) -> Samples:
    """``n`` states: rollouts (random and bounding policies) and perturbations of them."""
    from envport.envs.halfcheetah.reference import HalfCheetahReference

    rng = np.random.default_rng(seed)
    ref = HalfCheetahReference()
    visited: list[tuple[np.ndarray, np.ndarray, str]] = []
    ep = 0
    while len(visited) < 2 * n:
        obs = ref.reset(seed * 1000 + ep)
        scripted = ep % 2 == 1
        for t in range(episode_len):
            s = ref.get_state()
            visited.append((s["qpos"], s["qvel"], "bounding" if scripted else "random"))
            action = bounding_policy(obs, rng, t) if scripted else rng.uniform(-1, 1, 6)
            obs = ref.step(action)[0]
        ep += 1
    ref.close()
    picks = rng.choice(len(visited), size=n, replace=False)
    cm = cheetah_model()
    lo = np.full(cm.nv, -np.inf)
    hi = np.full(cm.nv, np.inf)
    lo[cm.limit_dof], hi[cm.limit_dof] = cm.limit_lo, cm.limit_hi
    qpos, qvel, ctrl, origin = [], [], [], []
    for k, i in enumerate(picks):
        q, v, kind = visited[i]
        q, v = q.copy(), v.copy()
        u = rng.uniform(-1, 1, 6)
        mode = k % 5
        if mode == 1:    # pushed into the floor and tilted: several capsules in contact
            q[1] -= rng.uniform(0.0, 0.35)
            q[2] += rng.normal(0, 0.5)
            kind += "+pressed"
        elif mode == 2:  # flipped over: torso and head on the ground
            q[2] = rng.uniform(-np.pi, np.pi)
            q[1] = rng.uniform(-0.6, 0.1)
            kind += "+flipped"
        elif mode == 3:  # joints at and beyond their limits, moving outwards
            for j in cm.limit_dof:
                side = rng.integers(2)
                q[j] = (lo[j] - rng.uniform(0, 0.15)) if side == 0 else (
                    hi[j] + rng.uniform(0, 0.15))
                v[j] = (-1 if side == 0 else 1) * rng.uniform(0, 5)
            kind += "+limits"
        elif mode == 4:  # fast and out-of-range controls (the clamp)
            v = v + rng.normal(0, 5, v.shape)
            u = rng.uniform(-2.5, 2.5, 6)
            kind += "+fast"
        qpos.append(q)
        qvel.append(v)
        ctrl.append(u)
        origin.append(kind)
    return Samples(np.array(qpos), np.array(qvel), np.array(ctrl), tuple(origin))


# ---------------------------------------------------------------------------- MuJoCo side
def mujoco_stages(s: Samples) -> list[dict[str, Any]]:
    """Per state: what MuJoCo computes for each stage (mj_forward after setting the state)."""
    import mujoco

    from envport.envs.halfcheetah.reference import apply_model_params

    m = load_mj_model()  # a private copy: its fields are edited
    defaults = physics.model_values(cheetah_model())
    d = mujoco.MjData(m)
    out = []
    for i, (q, v, u) in enumerate(zip(s.qpos, s.qvel, s.ctrl, strict=True)):
        apply_model_params(m, defaults if s.params is None else s.params[i])
        mujoco.mj_resetData(m, d)
        d.qpos[:], d.qvel[:], d.ctrl[:] = q, v, u
        mujoco.mj_kinematics(m, d)
        kin = {"xpos": d.xpos.copy(), "xmat": d.xmat.copy(), "geom_xpos": d.geom_xpos.copy(),
               "geom_xmat": d.geom_xmat.copy()}
        mujoco.mj_forward(m, d)
        M = np.zeros((m.nv, m.nv))
        mujoco.mj_fullM(m, d, M)
        nefc = d.nefc
        con = [{"geom": tuple(int(g) for g in d.contact[i].geom), "dist": d.contact[i].dist,
                "pos": d.contact[i].pos.copy(), "frame": d.contact[i].frame.copy(),
                "efc": int(d.contact[i].efc_address)} for i in range(d.ncon)]
        out.append({
            **kin, "qM": M, "qfrc_bias": d.qfrc_bias.copy(),
            "qfrc_passive": d.qfrc_passive.copy(), "qfrc_actuator": d.qfrc_actuator.copy(),
            "qacc_smooth": d.qacc_smooth.copy(), "contacts": con,
            "efc_J": d.efc_J[: nefc * m.nv].reshape(nefc, m.nv).copy(),
            "efc_type": d.efc_type[:nefc].copy(), "efc_id": d.efc_id[:nefc].copy(),
            "efc_pos": d.efc_pos[:nefc].copy(), "efc_R": d.efc_R[:nefc].copy(),
            "efc_aref": d.efc_aref[:nefc].copy(), "efc_force": d.efc_force[:nefc].copy(),
            "qacc": d.qacc.copy(), "qfrc_constraint": d.qfrc_constraint.copy(),
            "iterations": int(d.solver_niter[0]),
        })
    return out


# ------------------------------------------------------------------------------- JAX side
@cache
def _jax_forward() -> Callable:
    cm = cheetah_model()

    def one(q: jax.Array, v: jax.Array, u: jax.Array, dyn: physics.Dynamics
            ) -> dict[str, jax.Array]:
        # mj_resetData leaves qacc_warmstart = 0: MuJoCo's solver starts from the better of
        # 0 and qacc_smooth, and so does this one (the iterates, not just the minimiser, match).
        f = physics.forward(cm, q, v, u, jnp.zeros_like(v), dyn=dyn)
        kin = f.kin
        return {
            "xpos": physics.to_world(kin, kin.xpos), "xmat": physics.rotation_matrix(kin.xang),
            "cap_xpos": physics.to_world(kin, kin.cap_pos),
            "cap_axis": kin.cap_axis, "qM": f.M, "qfrc_bias": f.qfrc_bias,
            "qfrc_passive": f.qfrc_passive, "qfrc_actuator": f.qfrc_actuator,
            "qacc_smooth": f.qacc_smooth, "con_dist": f.con.dist,
            "con_pos": physics.to_world(kin, f.con.pos), "con_normal": f.con.normal,
            "con_tangent": f.con.tangent, "con_active": f.con.active, "efc_J": f.efc.J,
            "efc_pos": f.efc.pos, "efc_R": f.efc.R, "efc_aref": f.efc.aref,
            "efc_mask": f.efc.mask, "efc_force": f.sol.force, "qacc": f.sol.qacc,
            "qfrc_constraint": f.qfrc_constraint, "iterations": f.sol.iterations,
        }

    return jax.jit(jax.vmap(one))


def sample_dynamics(s: Samples) -> physics.Dynamics:
    """Per state (leading axis), the :class:`physics.Dynamics` of its params (float64)."""
    cm = cheetah_model()
    if s.params is None:
        rows = [physics.default_dynamics(cm)] * len(s.qpos)
    else:
        rows = [physics.dynamics(cm, {k: np.asarray(v, np.float64) for k, v in p.items()}, np)
                for p in s.params]
    return physics.Dynamics(*(cast(Any, np.stack(x)) for x in zip(*rows, strict=True)))


def jax_stages(s: Samples) -> dict[str, np.ndarray]:
    """The JAX pipeline's stages on the samples; the params are traced arguments (one compiled
    program for the compiled model's values and for random ones)."""
    with jax.enable_x64(True):
        args = (jnp.asarray(s.qpos, jnp.float64), jnp.asarray(s.qvel, jnp.float64),
                jnp.asarray(s.ctrl, jnp.float64))
        dyn = jax.tree.map(lambda x: jnp.asarray(x, jnp.float64), sample_dynamics(s))
        return {k: np.asarray(v) for k, v in _jax_forward()(*args, dyn).items()}


# ------------------------------------------------------------------------------ comparison
def rel_error(expected: np.ndarray, got: np.ndarray) -> float:
    """max |got - expected| / max(1, max |expected|): relative to the quantity's magnitude
    (a force of 1e3 is matched to 1e-2, one of 1e-3 to 1e-5 absolute)."""
    e, g = np.asarray(expected, np.float64), np.asarray(got, np.float64)
    if e.shape != g.shape:
        return float("inf")
    return float(np.max(np.abs(e - g), initial=0.0) / max(1.0, float(np.max(np.abs(e),
                                                                            initial=0.0))))


class Mismatch(AssertionError):
    pass


def _match_contacts(ref: dict[str, Any], ours: dict[str, np.ndarray], i: int,
                    cap_index: dict[int, int]) -> list[tuple[int, int]]:
    """Pairs (MuJoCo contact index, our slot), matched by capsule and end (nearest position)."""
    pairs = []
    for c_i, c in enumerate(ref["contacts"]):
        cap = cap_index[c["geom"][1]]
        slots = [2 * cap, 2 * cap + 1]
        d = [np.linalg.norm(ours["con_pos"][i, s] - c["pos"]) for s in slots]
        pairs.append((c_i, slots[int(np.argmin(d))]))
    return pairs


def compare(s: Samples, ref: list[dict[str, Any]], ours: dict[str, np.ndarray]
            ) -> dict[str, tuple[float, int]]:
    """Worst error per quantity and the state where it occurs."""
    cm = cheetah_model()
    cap_index = {int(g): k for k, g in enumerate(cm.cap_geom)}
    worst: dict[str, tuple[float, int]] = {}

    def note(name: str, err: float, i: int) -> None:
        if name not in worst or err > worst[name][0]:
            worst[name] = (err, i)

    for i, r in enumerate(ref):
        # Bodies 1.. (the world body's frame is the identity on both sides).
        note("kinematics.xpos", rel_error(r["xpos"][1:], ours["xpos"][i, 1:]), i)
        note("kinematics.xmat", rel_error(r["xmat"][1:].reshape(-1, 3, 3), ours["xmat"][i, 1:]),
             i)
        note("kinematics.geom_xpos", rel_error(r["geom_xpos"][cm.cap_geom],
                                               ours["cap_xpos"][i]), i)
        axis = r["geom_xmat"][cm.cap_geom].reshape(-1, 3, 3)[:, [0, 2], 2]
        note("kinematics.geom_axis", rel_error(axis, ours["cap_axis"][i]), i)
        for k in ("qM", "qfrc_bias", "qfrc_passive", "qfrc_actuator", "qacc_smooth", "qacc",
                  "qfrc_constraint"):
            note(k, rel_error(r[k], ours[k][i]), i)
        # The solver's Newton iteration count (mjData.solver_niter): 1 where it differs.
        note("solver.iterations", float(int(ours["iterations"][i]) != r["iterations"]), i)
        # Contacts: the same set (count), then dist, pos, frame and the 4 efc_J rows each.
        pairs = _match_contacts(r, ours, i, cap_index)
        n_ours = int(ours["con_active"][i].sum())
        note("contacts.count", float(n_ours != len(r["contacts"])), i)
        for c_i, slot in pairs:
            c = r["contacts"][c_i]
            note("contacts.active", float(not ours["con_active"][i, slot]), i)
            note("contacts.dist", rel_error(c["dist"], ours["con_dist"][i, slot]), i)
            note("contacts.pos", rel_error(c["pos"], ours["con_pos"][i, slot]), i)
            frame = c["frame"].reshape(3, 3)
            note("contacts.frame", max(rel_error(frame[0, [0, 2]], ours["con_normal"][i, slot]),
                                       rel_error(frame[1, [0, 2]],
                                                 ours["con_tangent"][i, slot])), i)
            # MuJoCo's 4 pyramid rows <-> our 3 (the last row stands for MuJoCo's last two).
            rows = cm.nlimit + physics.ROWS_PER_CONTACT * slot + np.array([0, 1, 2, 2])
            a = c["efc"]
            note("efc_J.contact", rel_error(r["efc_J"][a:a + 4], ours["efc_J"][i, rows]), i)
            for k in ("efc_pos", "efc_R", "efc_aref", "efc_force"):
                note(f"{k}.contact", rel_error(r[k][a:a + 4], ours[k][i, rows]), i)
        # Limits: MuJoCo's limit rows (type 3: mjCNSTR_LIMIT_JOINT) by joint id.
        limit_rows = {int(j): k for k, j in enumerate(cm.limit_dof)}
        lim = [a for a in range(len(r["efc_type"])) if r["efc_type"][a] == 3]
        note("limits.count", float(len(lim) != int(ours["efc_mask"][i, :cm.nlimit].sum())), i)
        for a in lim:
            row = limit_rows[int(r["efc_id"][a])]
            note("efc_J.limit", rel_error(r["efc_J"][a], ours["efc_J"][i, row]), i)
            for k in ("efc_pos", "efc_R", "efc_aref", "efc_force"):
                note(f"{k}.limit", rel_error(r[k][a], ours[k][i, row]), i)
    return worst


STAGES: dict[str, tuple[str, ...]] = {
    "kinematics": ("kinematics.xpos", "kinematics.xmat", "kinematics.geom_xpos",
                   "kinematics.geom_axis"),
    "mass_matrix": ("qM",),
    "bias_forces": ("qfrc_bias",),
    "passive_forces": ("qfrc_passive",),
    "actuation": ("qfrc_actuator",),
    "contacts": ("contacts.count", "contacts.active", "contacts.dist", "contacts.pos",
                 "contacts.frame", "efc_J.contact"),
    "constraints": ("limits.count", "efc_J.limit", "efc_pos.limit", "efc_pos.contact",
                    "efc_R.limit", "efc_R.contact", "efc_aref.limit", "efc_aref.contact"),
    "solver": ("qacc_smooth", "efc_force.limit", "efc_force.contact", "qfrc_constraint",
               "qacc", "solver.iterations"),
}


@cache
def stage_errors(n: int = 120, seed: int = 0, param_seed: int | None = None
                 ) -> tuple[dict[str, tuple[float, int]], Samples]:
    """Worst error per quantity over ``n`` sampled states (computed once per process), with
    the compiled model's params or (``param_seed``) random params per state."""
    s = rollout_states(n, seed)
    if param_seed is not None:
        s = with_random_params(s, param_seed)
    return compare(s, mujoco_stages(s), jax_stages(s)), s


def check_stage(stage: str, n: int = 120, seed: int = 0, rtol: float = RTOL,
                param_seed: int | None = None) -> None:
    """Raise ``AssertionError`` if any quantity of ``stage`` misses MuJoCo by more than rtol
    (with random params per state when ``param_seed`` is given)."""
    worst, s = stage_errors(n, seed, param_seed)
    bad = []
    for name in STAGES[stage]:
        if name not in worst:
            continue  # e.g. no limit row was active in any sampled state
        err, i = worst[name]
        if not err <= rtol:
            bad.append(f"{name}: error {err:.3g} > {rtol:g} at state {i} ({s.origin[i]}; "
                       f"qpos={np.array2string(s.qpos[i], precision=4)}, "
                       f"qvel={np.array2string(s.qvel[i], precision=4)}, "
                       f"ctrl={np.array2string(s.ctrl[i], precision=3)})")
    if bad:
        which = "" if param_seed is None else f", random params (seed {param_seed})"
        raise Mismatch(f"halfcheetah {stage} differs from MuJoCo (float64{which}, relative to "
                       "the quantity's magnitude): " + "; ".join(bad))


def components() -> dict[str, Callable[[], None]]:
    """``EnvSpec.verification.components``: one check per stage."""
    return {stage: functools.partial(check_stage, stage) for stage in STAGES}
