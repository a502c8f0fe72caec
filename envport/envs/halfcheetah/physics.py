"""MuJoCo's pipeline for the planar HalfCheetah, in JAX: one ``mj_step`` = :func:`step`.

The stages follow ``mj_step`` (Euler integrator) and are checked one by one against C MuJoCo
(tests/envs/halfcheetah/test_physics.py, ``SPEC.verification.components``):

=====================  ==========================================  ==========================
stage                  MuJoCo                                      here
=====================  ==========================================  ==========================
kinematics             mj_kinematics (xpos, xmat, geom frames)     :func:`kinematics`
mass matrix            mj_crb + armature (qM)                      :func:`mass_matrix`
bias forces            mj_rne, flg_acc=0 (qfrc_bias)               :func:`bias_force`
passive forces         mj_passive (springs, dampers)               :func:`passive_force`
actuation              mj_fwdActuation (ctrl clamp, gear)          :func:`actuator_force`
contacts               mj_collision, mjc_PlaneCapsule              :func:`contacts`
constraints            mj_makeConstraint, mj_makeImpedance,        :func:`constraints`
                       mj_referenceConstraint (J, R, D, aref)
solver                 mj_solNewton (primal Newton, line search)   :func:`solve`
integrator             mj_Euler (implicit joint damping)           :func:`step`
=====================  ==========================================  ==========================

Specialisation (checked by ``model.from_mjmodel``): the model is planar, so a body pose is a
2-D position and an angle about y, and spatial vectors are 3-vectors (angular y, linear x, z).
Spatial quantities are taken about the subtree centre of mass of the root body, as MuJoCo does,
and positions are computed relative to the root's x slide (nothing in the world depends on x),
so float32 keeps its precision however far the cheetah runs.

Fixed shapes for jit/vmap: 16 potential contacts (two end spheres per capsule) and 6 potential
limit rows (one per limited joint: both sides can never be active together), with masks. The
pyramidal cone gives 4 rows per contact, two of them identical for a planar model (kept as one
row of weight 2), so the constraint system has 6 + 16 * 3 = 54 masked rows.
The Newton solver takes MuJoCo's iterates on its primal cost, line search and stopping rule
included (see :func:`solve`), so it stops where MuJoCo stops, short of the exact minimiser.

Layout (for speed on CPU): every array has its per-environment shape FIRST and any batch axes
LAST (``qpos`` is (9,) for one environment, (9, B) for B of them), and the code indexes only the
leading axes. Called for one environment (under ``jax.vmap`` too) this is ordinary per-env code;
called on arrays with trailing batch axes (``jax_env`` moves vmap's batch axis there with a
``custom_vmap`` rule) every per-env scalar is a contiguous (B,) vector, so XLA's CPU backend
fuses the thousands of scalar operations into loops vectorised across the batch. For the same
reason there are no matrix products: under vmap a 9 x 9 or 54 x 9 dot becomes one tiny matrix
product per environment, which XLA's CPU backend runs several times slower than the
elementwise code here. The constraint Jacobian is used in factored form (:class:`RowJacobian`),
and the mass matrix and Newton Hessian as their tree-sparse entries (:func:`tree_factor`).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any, NamedTuple, cast

import jax
import jax.numpy as jnp
import numpy as np

from envport.envs.halfcheetah.model import MJ_MINVAL, CheetahModel

Array = jax.Array
Vec2 = tuple[Array, Array]  # a planar vector (x, z) as two per-env scalars


def bcast(c: np.ndarray, like: Array) -> Array:
    """A per-env constant (k, ...) shaped to broadcast against ``like`` (k, ..., *batch)."""
    c = np.asarray(c)
    return jnp.asarray(c, like.dtype).reshape(c.shape + (1,) * (like.ndim - c.ndim))


def take(x: Array, index: np.ndarray | list[int]) -> Array:
    """x[index] along the leading axis for a static index, as static slices: an index array's
    dtype would follow the x64 mode it was first converted in, which breaks when float32 and
    float64 runs share a process."""
    return jnp.stack([x[int(i)] for i in index])


def materialize(x: Any) -> Any:
    """Compute ``x`` (a pytree) here, as its own arrays (an optimisation barrier).

    XLA's CPU backend fuses cheap elementwise producers into every consumer, duplicating them;
    across the long chains of scalar operations of this module (the tree passes, the LDL'
    factor) that recomputed shared values many times over (a step ran ~4x slower and took
    minutes to compile), so stage results are materialised at their boundaries."""
    return jax.lax.optimization_barrier(x)


def lead_sum(x: Array, axis: int = 0, op: Any = jnp.add) -> Array:
    """Reduce the per-env ``axis`` by halving (pairwise). XLA's CPU backend reduces over an axis
    that is not the innermost slowly (with the batch innermost, every per-env reduction is
    one); as elementwise operations on slices it fuses and vectorises."""
    while x.shape[axis] > 1:
        n = x.shape[axis]
        h = n // 2
        r = op(jax.lax.slice_in_dim(x, 0, h, axis=axis),
               jax.lax.slice_in_dim(x, h, 2 * h, axis=axis))
        if n % 2:
            r = jnp.concatenate([r, jax.lax.slice_in_dim(x, 2 * h, n, axis=axis)], axis=axis)
        x = r
    return jnp.squeeze(x, axis)


# ------------------------------------------------------------------- model params (data)
def model_values(cm: CheetahModel) -> dict[str, np.ndarray]:
    """The compiled model's values of the params (``model.PARAM_SHAPES``), float64."""
    return {"body_mass": cm.body_mass, "body_inertia": cm.body_inertia,
            "geom_friction": cm.geom_friction, "dof_damping": cm.dof_damping,
            "dof_armature": cm.dof_armature, "jnt_stiffness": cm.dof_stiffness,
            "actuator_gear": cm.act_gear, "gravity": cm.gravity3}


class Dynamics(NamedTuple):
    """What the pipeline reads of the params, derived once per env step (:func:`dynamics`).
    Per-env arrays; with trailing batch axes like the state's (size 1 where params are shared
    by the batch)."""

    body_mass: Array      # (nbody,)
    total_mass: Array     # () mass of the bodies 1.. (the root subtree)
    body_iyy: Array       # (nbody,) moment of inertia about y through the centre of mass
    dof_armature: Array   # (nv,)
    dof_damping: Array    # (nv,)
    damping_dt: Array     # (nv,) timestep * dof_damping (the implicit integrator's h B)
    dof_stiffness: Array  # (nv,)
    act_gear: Array       # (nu,)
    gravity: Array        # (2,) (x, z)
    friction0: Array      # (ncon,) each contact's sliding friction (the pyramid's f0)
    friction0_sq: Array   # (ncon,) f0^2
    diagA: Array          # (nefc,) diagApprox of each row (R0 = (1 - imp) / imp diagA)
    pyramid_scale: Array  # (nefc,) 2 f0^2 / impratio on contact rows, 1 on limit rows


def dynamics(cm: CheetahModel, values: Mapping[str, Any], xp: Any = np) -> Dynamics:
    """:class:`Dynamics` of one environment from param ``values`` (``model.PARAM_SHAPES``), in
    numpy float64 (``xp=np``: concrete params) or traced (``xp=jnp``, values already in the
    compute dtype).

    As when a MuJoCo model's fields are edited in place (no ``mj_setConst``), what MuJoCo
    computes once at compile time from the masses stays at the compiled model's values: the
    constraint rows' ``invweight0`` (diagApprox) and ``stat.meaninertia``."""
    dtype = values["body_mass"].dtype if xp is jnp else np.float64

    def const(c: Any) -> Any:
        return xp.asarray(c, dtype)

    mass = values["body_mass"]
    row = const(cm.body_iyy_row)
    # I_yy of R diag(I) R' (model.py): (r_k I_k) r_k summed, as the compiled value.
    iyy = ((row * values["body_inertia"]) * row).sum(axis=-1)
    fric = values["geom_friction"]
    f_cap = []
    for sources in cm.cap_friction_geoms:
        f = fric[sources[0], 0]
        for g in sources[1:]:
            f = xp.maximum(f, fric[g, 0])
        f_cap.append(f)
    f0 = xp.stack([f for f in f_cap for _ in range(2)])          # (ncon,): two per capsule
    k = ROWS_PER_CONTACT
    # diagApprox of a contact's first pyramid row, tran (1 + f0^2): R0 comes from it, and every
    # pyramid row then gets Rpy = 2 mu^2 R0 with mu = f0 sqrt(1 / impratio) (mj_makeImpedance).
    diag0 = const(np.repeat(cm.cap_invweight, 2)) * (1 + f0 ** 2)
    g = values["gravity"]
    return Dynamics(
        body_mass=mass, total_mass=sum(mass[b] for b in range(1, cm.nbody)), body_iyy=iyy,
        dof_armature=values["dof_armature"], dof_damping=values["dof_damping"],
        damping_dt=cm.timestep * values["dof_damping"], dof_stiffness=values["jnt_stiffness"],
        act_gear=values["actuator_gear"],
        gravity=xp.stack([g[0], g[2]]), friction0=f0, friction0_sq=f0 * f0,
        diagA=xp.concatenate([const(cm.limit_invweight), xp.repeat(diag0, k)]),
        pyramid_scale=xp.concatenate([
            const(np.ones(cm.nlimit)),
            xp.repeat(2 * f0 ** 2 / max(MJ_MINVAL, cm.impratio), k)]))


@functools.cache
def default_dynamics(cm: CheetahModel) -> Dynamics:
    """:func:`dynamics` of the compiled model's own values (numpy float64)."""
    return dynamics(cm, model_values(cm), np)


def resolve(cm: CheetahModel, dyn: Dynamics | None, batch_like: Array) -> Dynamics:
    """``dyn``, or the compiled model's (:func:`default_dynamics`) in ``batch_like``'s dtype and
    shaped to broadcast against its (batch) shape."""
    if dyn is not None:
        return dyn
    pad = (1,) * batch_like.ndim
    return Dynamics(*(jnp.asarray(x, batch_like.dtype).reshape(np.shape(x) + pad)
                      for x in default_dynamics(cm)))


def vec(v: Vec2) -> Array:
    return jnp.stack(v)


def rot(c: Array, s: Array, v: Vec2 | np.ndarray) -> Vec2:
    """Rotate the planar vector v by the angle whose cosine and sine are c, s (about +y)."""
    vx, vz = v
    if isinstance(vx, np.floating | float):
        vx, vz = float(vx), float(vz)
    return c * vx + s * vz, -s * vx + c * vz


# ------------------------------------------------------------------------------- kinematics
class Kinematics(NamedTuple):
    """Body and geom poses relative to the root's x slide (add ``x`` for world positions)."""

    x: Array            # qpos of the x slide (the offset removed from every x coordinate)
    xpos: Array         # (nbody, 2) body frame origins
    xang: Array         # (nbody,) body frame angles about y
    com: Array          # (nbody, 2) body centres of mass
    anchor: Array       # (nv, 2) joint anchors (xanchor)
    axis: Array         # (nv, 2) slide axes in the world (xaxis); hinges: unused
    cap_pos: Array      # (ncap, 2) capsule centres
    cap_axis: Array     # (ncap, 2) capsule axes (the geom's z axis)
    c0: Array           # (2,) subtree centre of mass of the root body


def kinematics(cm: CheetahModel, qpos: Array, dyn: Dynamics | None = None) -> Kinematics:
    """mj_kinematics: body frames from the root down, joints applied in MuJoCo's order."""
    zero = jnp.zeros_like(qpos[0])
    dyn = resolve(cm, dyn, zero)
    # Joints displace the body from its pose at qpos0 (body_pos/body_quat describe qpos0).
    q = [qpos[j] - float(cm.qpos0[j]) for j in range(cm.nv)]
    xpos: list[Vec2] = [(zero, zero)]
    xang: list[Array] = [zero]
    cs: list[tuple[Array, Array]] = [(zero + 1.0, zero)]  # cos, sin of each body angle
    anchor: list[Vec2] = [(zero, zero)] * cm.nv
    axis: list[Vec2] = [(zero, zero)] * cm.nv
    for b in range(1, cm.nbody):
        p = cm.body_parent[b]
        ox, oz = rot(*cs[p], cm.body_pos[b])
        pos = (xpos[p][0] + ox, xpos[p][1] + oz)
        ang = xang[p] + float(cm.body_angle[b])
        c, s = jnp.cos(ang), jnp.sin(ang)
        for j in cm.body_dofs[b]:
            lx, lz = rot(c, s, cm.dof_anchor[j])
            anchor[j] = (pos[0] + lx, pos[1] + lz)  # before the joint moves the frame
            if cm.dof_is_hinge[j]:
                # Rotate about the anchor: the anchor stays, the frame origin swings around it.
                ang = ang + float(cm.dof_axis[j][0]) * q[j]
                c, s = jnp.cos(ang), jnp.sin(ang)
                lx, lz = rot(c, s, cm.dof_anchor[j])
                pos = (anchor[j][0] - lx, anchor[j][1] - lz)
            else:
                axis[j] = rot(c, s, cm.dof_axis[j])
                if j != cm.x_dof:  # the x slide is added back by the caller (see Kinematics)
                    pos = (pos[0] + axis[j][0] * q[j], pos[1] + axis[j][1] * q[j])
        xpos.append(pos)
        xang.append(ang)
        cs.append((c, s))
    com = []
    for b in range(cm.nbody):
        c, s = cs[b]
        ix, iz = rot(c, s, cm.body_ipos[b])
        com.append((xpos[b][0] + ix, xpos[b][1] + iz))
    mass = dyn.body_mass
    cx, cz = (sum(mass[b] * com[b][k] for b in range(1, cm.nbody)) / dyn.total_mass
              for k in range(2))
    c0 = (cx, cz)
    cap_pos, cap_axis = [], []
    for k, b in enumerate(cm.cap_body):
        c, s = cs[b]
        px, pz = rot(c, s, cm.cap_pos[k])
        cap_pos.append((xpos[b][0] + px, xpos[b][1] + pz))
        ang = xang[b] + float(cm.cap_angle[k])
        cap_axis.append((jnp.sin(ang), jnp.cos(ang)))
    return materialize(Kinematics(
        q[cm.x_dof], jnp.stack([vec(p) for p in xpos]), jnp.stack(xang),
        jnp.stack([vec(p) for p in com]), jnp.stack([vec(p) for p in anchor]),
        jnp.stack([vec(p) for p in axis]), jnp.stack([vec(p) for p in cap_pos]),
        jnp.stack([vec(p) for p in cap_axis]), vec(c0)))


def rotation_matrix(angle: Array) -> Array:
    """The 3x3 world rotation (MuJoCo's xmat, row-major) of frames at ``angle`` (n,) about y."""
    c, s = jnp.cos(angle), jnp.sin(angle)
    z, o = jnp.zeros_like(c), jnp.ones_like(c)
    m = jnp.stack([c, z, s, z, o, z, -s, z, c], axis=1)
    return m.reshape((*angle.shape[:1], 3, 3, *angle.shape[1:]))


def to_world(kin: Kinematics, p: Array) -> Array:
    """Relative planar points (n, 2) -> world 3-D positions (n, 3) (y = 0)."""
    return jnp.stack([p[:, 0] + kin.x, jnp.zeros_like(p[:, 0]), p[:, 1]], axis=1)


# ----------------------------------------------------------------- spatial algebra (planar)
def cdof(cm: CheetahModel, kin: Kinematics) -> Array:
    """(nv, 3) motion subspaces about ``c0`` (MuJoCo's cdof): hinge s*(1, r_z, -r_x) with
    r = c0 - anchor (the velocity at c0 of a unit rotation about the anchor); slide (0, axis)."""
    out = []
    for j in range(cm.nv):
        if cm.dof_is_hinge[j]:
            s = float(cm.dof_axis[j][0])
            rx, rz = kin.c0[0] - kin.anchor[j, 0], kin.c0[1] - kin.anchor[j, 1]
            out.append(jnp.stack([jnp.full_like(rx, s), s * rz, -s * rx]))
        else:
            ax = kin.anchor[j, 0]
            out.append(jnp.stack([jnp.zeros_like(ax), kin.axis[j, 0], kin.axis[j, 1]]))
    return materialize(jnp.stack(out))


def cross_motion(v: Array, m: Array) -> Array:
    """v x m for planar motion vectors (3,) (MuJoCo's mju_crossMotion restricted to the
    plane)."""
    return jnp.stack([jnp.zeros_like(v[0]), v[0] * m[2] - v[2] * m[0],
                      -v[0] * m[1] + v[1] * m[0]])


def cross_force(v: Array, f: Array) -> Array:
    """v x* f for a planar motion vector and force (3,) (MuJoCo's mju_crossForce)."""
    return jnp.stack([v[2] * f[1] - v[1] * f[2], v[0] * f[2], -v[0] * f[1]])


def dot3(a: Array, b: Array) -> Array:
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]


# Symmetric 3x3 spatial matrices (inertias, J'DJ blocks) are stored as their 6 upper entries
# (00, 01, 02, 11, 12, 22); SYM[r][c] is where entry [r, c] lives.
SYM = ((0, 1, 2), (1, 3, 4), (2, 4, 5))


def sym_matvec(S: Array, v: Array) -> Array:
    """S v for a symmetric 3x3 matrix in 6-entry form (6,) and a vector (3,)."""
    return jnp.stack([S[SYM[r][0]] * v[0] + S[SYM[r][1]] * v[1] + S[SYM[r][2]] * v[2]
                      for r in range(3)])


def body_inertia(cm: CheetahModel, kin: Kinematics, dyn: Dynamics | None = None) -> Array:
    """(nbody, 6) spatial inertia of each body about c0 (MuJoCo's cinert, planar part), in the
    6-entry symmetric form of :data:`SYM`."""
    dyn = resolve(cm, dyn, kin.x)
    out = []
    for b in range(cm.nbody):
        m = dyn.body_mass[b]
        rx, rz = kin.com[b, 0] - kin.c0[0], kin.com[b, 1] - kin.c0[1]
        iyy = dyn.body_iyy[b] + m * (rx**2 + rz**2)
        zero = jnp.zeros_like(rx)
        out.append(jnp.stack([iyy, m * rz, -m * rx, zero + m, zero, zero + m]))
    return materialize(jnp.stack(out))


def subtree_sums(cm: CheetahModel, per_body: dict[int, Array]) -> dict[int, Array]:
    """Sum body quantities over each body's subtree (leaves first, as mj_crb's composite
    inertia and mj_rne's backward pass). Bodies absent from ``per_body`` contribute nothing."""
    total = materialize(dict(per_body))
    for b in range(cm.nbody - 1, 0, -1):
        p = cm.body_parent[b]
        if p > 0 and b in total:
            total[p] = total[b] if p not in total else total[p] + total[b]
    return materialize(total)


def tree_pairs(cm: CheetahModel) -> list[tuple[int, int]]:
    """The (i, j) with j = i or an ancestor of i: where a tree-sparse matrix (M, M + J'DJ) can
    be nonzero in its lower triangle (36 of 81 entries here)."""
    return [(i, j) for i in range(cm.nv) for j in _path(cm, i)]


def crb_entries(cm: CheetahModel, cd: Array, composite: dict[int, Array]
                ) -> dict[tuple[int, int], Array]:
    """mj_crb's projection: A[i, j] = cdof_j . (C_body(i) cdof_i) for j on the path from dof i
    to the root, C the composite (subtree-summed) spatial matrix of dof i's body (absent: 0)."""
    out = {}
    for i in range(cm.nv):
        b = int(cm.dof_body[i])
        path = _path(cm, i)
        if b not in composite:
            for j in path:
                out[(i, j)] = jnp.zeros_like(cd[i, 0])
            continue
        # The whole path at once (one array, not one per entry: XLA's CPU backend runs a
        # kernel per materialised array, and kernels of one scalar per environment are mostly
        # launch overhead).
        y = sym_matvec(composite[b], cd[i])
        row = materialize(dot3(jnp.moveaxis(take(cd, path), 1, 0), y))
        for n, j in enumerate(path):
            out[(i, j)] = row[n]
    return out


def mass_entries(cm: CheetahModel, cd: Array, inert: Array, dyn: Dynamics | None = None
                 ) -> dict[tuple[int, int], Array]:
    """mj_crb: composite inertias up the tree, M[i, j] = cdof_j . (Ic_body(i) cdof_i) for j on
    the path from dof i to the root; armature on the diagonal (the trap: it is part of qM).
    The tree-sparse lower triangle as a dict {(i, j): value}, the form :func:`tree_factor`,
    :func:`tree_matvec` and the solver use."""
    dyn = resolve(cm, dyn, cd[0, 0])
    out = crb_entries(cm, cd, subtree_sums(cm, {b: inert[b] for b in range(1, cm.nbody)}))
    for i in range(cm.nv):
        out[(i, i)] = out[(i, i)] + dyn.dof_armature[i]
    return out


def dense(cm: CheetahModel, entries: dict[tuple[int, int], Array]) -> Array:
    """The full symmetric (nv, nv) matrix of tree-sparse lower-triangle ``entries``."""
    zero = jnp.zeros_like(entries[(0, 0)])
    return jnp.stack([jnp.stack([entries.get((i, j), entries.get((j, i), zero))
                                 for j in range(cm.nv)]) for i in range(cm.nv)])


def tree_matvec(cm: CheetahModel, entries: dict[tuple[int, int], Array], x: Array) -> Array:
    """A x (nv,) for a symmetric tree-sparse A given by its lower-triangle ``entries`` (63
    products instead of 81)."""
    out: list[Array] = [jnp.zeros_like(x[0])] * cm.nv
    for (i, j), a in entries.items():
        out[i] = out[i] + a * x[j]
        if i != j:
            out[j] = out[j] + a * x[i]
    return materialize(jnp.stack(out))


def mass_matrix(cm: CheetahModel, kin: Kinematics, cd: Array, inert: Array,
                dyn: Dynamics | None = None) -> Array:
    """qM as a dense (nv, nv) matrix (what mj_fullM returns); see :func:`mass_entries`."""
    return dense(cm, mass_entries(cm, cd, inert, dyn))


def bias_force(cm: CheetahModel, kin: Kinematics, cd: Array, inert: Array,
               qvel: Array, dyn: Dynamics | None = None) -> Array:
    """mj_rne with flg_acc=0: Coriolis, centrifugal and gravity forces (qfrc_bias)."""
    zero = jnp.zeros_like(cd[0])
    cvel = [zero]
    g = resolve(cm, dyn, qvel[0]).gravity
    qvel = materialize(qvel)
    cacc = [jnp.stack([zero[0], zero[1] - g[0], zero[2] - g[1]])]  # -gravity
    for b in range(1, cm.nbody):
        p = cm.body_parent[b]
        v, a = cvel[p], cacc[p]
        for j in cm.body_dofs[b]:
            # cdof_dot uses the velocity before this dof is added (as MuJoCo: v x v = 0 anyway).
            a = a + cross_motion(v, cd[j]) * qvel[j]
            v = v + cd[j] * qvel[j]
        cvel.append(v)
        cacc.append(a)
    frc = subtree_sums(cm, {
        b: sym_matvec(inert[b], cacc[b]) + cross_force(cvel[b], sym_matvec(inert[b], cvel[b]))
        for b in range(1, cm.nbody)})
    return jnp.stack([dot3(cd[j], frc[int(cm.dof_body[j])]) for j in range(cm.nv)])


def passive_force(cm: CheetahModel, qpos: Array, qvel: Array, dyn: Dynamics | None = None
                  ) -> Array:
    """mj_passive: joint springs -k (q - q_spring) and dampers -b qdot."""
    dyn = resolve(cm, dyn, qpos[0])
    spring = -dyn.dof_stiffness * (qpos - bcast(cm.dof_springref, qpos))
    return spring - dyn.dof_damping * qvel


def clamp_ctrl(cm: CheetahModel, ctrl: Array) -> Array:
    """MuJoCo clamps ctrl to ctrlrange before use (it never writes the clamped value back)."""
    lo = np.where(cm.act_ctrllimited, cm.act_ctrlrange[:, 0], -np.inf)
    hi = np.where(cm.act_ctrllimited, cm.act_ctrlrange[:, 1], np.inf)
    return jnp.clip(ctrl, bcast(lo, ctrl), bcast(hi, ctrl))


def actuator_force(cm: CheetahModel, ctrl: Array, dyn: Dynamics | None = None) -> Array:
    """mj_fwdActuation for motors: force = gain * clamp(ctrl), qfrc = gear * force."""
    gear = resolve(cm, dyn, ctrl[0]).act_gear
    force = bcast(cm.act_gain, ctrl) * clamp_ctrl(cm, ctrl)
    qfrc: list[Array] = [jnp.zeros_like(ctrl[0])] * cm.nv
    for k in range(cm.nu):
        j = int(cm.act_dof[k])
        qfrc[j] = qfrc[j] + gear[k] * force[k]
    return jnp.stack(qfrc)


# --------------------------------------------------------------------------------- contacts
class Contacts(NamedTuple):
    """Potential contacts, two per capsule (the +axis end first, as mjc_PlaneCapsule)."""

    dist: Array      # (ncon,) signed distance (negative: penetration)
    pos: Array       # (ncon, 2) contact point (relative x)
    normal: Array    # (ncon, 2) frame row 0 (the plane normal)
    tangent: Array   # (ncon, 2) frame row 1 (capsule axis made orthogonal to the normal)
    active: Array    # (ncon,) bool: the contact is a constraint (dist < includemargin)
    body: np.ndarray  # (ncon,) the capsule's body (static)


def contacts(cm: CheetahModel, kin: Kinematics) -> Contacts:
    """mjc_PlaneCapsule: a plane-sphere test at each end of every capsule."""
    nx, nz = (float(v) for v in cm.floor_normal)
    # The floor's origin relative to the x slide.
    p0x, p0z = float(cm.floor_pos[0]) - kin.x, float(cm.floor_pos[1])
    dist, pos, tangent = [], [], []
    for k in range(cm.ncap):
        ax, az = kin.cap_axis[k, 0], kin.cap_axis[k, 1]
        half, radius = float(cm.cap_halflen[k]), float(cm.cap_radius[k])
        # mju_makeFrame: y axis = capsule axis orthogonalised against the normal, normalised
        # by mju_normalize3, which gives (1, 0, 0) below mjMINVAL: a capsule standing straight
        # up (in float32 its axis can be exactly the normal) has no orthogonal part.
        an = ax * nx + az * nz
        tx, tz = ax - an * nx, az - an * nz
        norm = jnp.sqrt(tx * tx + tz * tz)
        undefined = norm < MJ_MINVAL
        inv = 1.0 / jnp.where(undefined, 1.0, norm)
        tx, tz = jnp.where(undefined, 1.0, tx * inv), jnp.where(undefined, 0.0, tz * inv)
        for sign in (1.0, -1.0):
            ex = kin.cap_pos[k, 0] + sign * half * ax
            ez = kin.cap_pos[k, 1] + sign * half * az
            d = (ex - p0x) * nx + (ez - p0z) * nz - radius
            dist.append(d)
            pos.append(jnp.stack([ex - nx * (d / 2 + radius), ez - nz * (d / 2 + radius)]))
            tangent.append(jnp.stack([tx, tz]))
    dist_a, pos_a = jnp.stack(dist), jnp.stack(pos)
    # Detected when dist <= margin, a constraint unless excluded for dist >= includemargin.
    include = np.repeat(np.minimum(cm.cap_includemargin, cm.cap_margin), 2)
    active = dist_a < bcast(include, dist_a)
    normal = jnp.broadcast_to(bcast(np.tile(cm.floor_normal, (cm.ncon, 1)), pos_a), pos_a.shape)
    dist_a, pos_a, tangent_a, active = materialize((dist_a, pos_a, jnp.stack(tangent), active))
    return Contacts(dist_a, pos_a, normal, tangent_a, active, np.repeat(cm.cap_body, 2))


# ------------------------------------------------------------------------------ constraints
ROWS_PER_CONTACT = 3


class RowJacobian(NamedTuple):
    """The constraint Jacobian J (nefc, nv) in factored form: what the solver multiplies with.

    A limit row is +-1 on its dof. Contact c's rows are n.Jp + f0 t.Jp, n.Jp - f0 t.Jp and n.Jp
    (see :class:`Constraints`), Jp (2, nv) the Jacobian of the contact point (mj_jac): Jp x is
    the velocity of the point when the dofs move at x, i.e. V_lin + V_ang (r_z, -r_x) with
    V = sum of cdof_j x_j over the dofs on the body's path to the root and r = point - c0. So
    J x is one pass down the tree (:func:`jac_mul`), J'f one pass up with the row forces turned
    into spatial forces about c0 (:func:`jac_t_mul`), and J'DJ is, per body, a 3x3 spatial
    matrix summed over subtrees and projected like mj_crb's composite inertia
    (:func:`constraint_hessian`): a few hundred operations on scalars instead of products with a
    dense 54 x 9 matrix (mostly zeros: a contact moves only the dofs above its body). The dense
    J of :class:`Constraints` is this one applied to the unit vectors, so the stage checks
    against MuJoCo's efc_J check this form."""

    cd: Array          # (nv, 3) cdof
    lever: Array       # (ncon, 2) u = (r_z, -r_x): the point's velocity per unit rotation
    normal: Array      # (ncon, 2)
    tangent: Array     # (ncon, 2)
    limit_sign: Array  # (nlimit,) +1 at the lower limit (J = +1), -1 at the upper
    friction0: Array   # (ncon,) the pyramid's f0 of each contact (Dynamics.friction0)
    friction0_sq: Array  # (ncon,) f0^2


def _contact_body(cm: CheetahModel) -> np.ndarray:
    return np.repeat(cm.cap_body, 2)


def _per_body(cm: CheetahModel, per_contact: list[Array]) -> dict[int, Array]:
    """Sum a per-contact quantity over each body's contacts (static groups)."""
    body = _contact_body(cm)
    out: dict[int, Array] = {}
    for c, b in enumerate(body):
        out[int(b)] = per_contact[c] if int(b) not in out else out[int(b)] + per_contact[c]
    return out


def jac_mul(cm: CheetahModel, jac: RowJacobian, x: Array) -> Array:
    """J x (nefc,): limit rows, then three rows per contact."""
    vel: list[Array | None] = [None] * cm.nbody         # V of each body (None: the world)
    for b in range(1, cm.nbody):
        v = vel[cm.body_parent[b]]
        for j in cm.body_dofs[b]:
            v = jac.cd[j] * x[j] if v is None else v + jac.cd[j] * x[j]
        vel[b] = v
    vel = materialize(vel)
    limits = jac.limit_sign * take(x, cm.limit_dof)
    # Every contact at once (arrays over contacts, see crb_entries).
    V = jnp.stack([cast(Array, vel[int(b)]) for b in _contact_body(cm)])  # (ncon, 3, ...)
    vx = V[:, 1] + V[:, 0] * jac.lever[:, 0]              # velocity of the contact point
    vz = V[:, 2] + V[:, 0] * jac.lever[:, 1]
    vn = jac.normal[:, 0] * vx + jac.normal[:, 1] * vz
    vt = jac.friction0 * (jac.tangent[:, 0] * vx + jac.tangent[:, 1] * vz)
    rows = jnp.stack([vn + vt, vn - vt, vn], axis=1)
    return materialize(jnp.concatenate([limits, rows.reshape(-1, *rows.shape[2:])]))


def jac_t_mul(cm: CheetahModel, jac: RowJacobian, f: Array) -> Array:
    """J' f (nv,) for row forces f (nefc,) (a weight-2 row's force counted twice by the caller)."""
    nl, k = cm.nlimit, ROWS_PER_CONTACT
    F = f[nl:].reshape(cm.ncon, k, *f.shape[1:])        # every contact at once
    fa, fb, fc = F[:, 0], F[:, 1], F[:, 2]
    fn, ft = fa + fb + fc, jac.friction0 * (fa - fb)
    px = jac.normal[:, 0] * fn + jac.tangent[:, 0] * ft     # force at the point
    pz = jac.normal[:, 1] * fn + jac.tangent[:, 1] * ft
    # As a spatial force about c0: torque u . P (the power of a unit rotation), then P.
    spatial = materialize(jnp.stack([jac.lever[:, 0] * px + jac.lever[:, 1] * pz, px, pz],
                                    axis=1))
    total = subtree_sums(cm, _per_body(cm, spatial))
    qfrc = [dot3(jac.cd[j], total[int(cm.dof_body[j])]) for j in range(cm.nv)]
    for n, j in enumerate(cm.limit_dof):
        qfrc[int(j)] = qfrc[int(j)] + jac.limit_sign[n] * f[n]
    return materialize(jnp.stack(qfrc))


def constraint_hessian(cm: CheetahModel, jac: RowJacobian, d: Array
                       ) -> dict[tuple[int, int], Array]:
    """J' diag(d) J (tree-sparse lower-triangle entries) for row weights d (nefc,).

    Per contact, sum_rows d_k J_k'J_k = Jp' K Jp with K = (d0 + d1 + d2) nn' +
    f0 (d0 - d1)(nt' + tn') + f0^2 (d0 + d1) tt' (2 x 2); with Jp = S(u) [cdof_j] and
    S(u) = [u | I] that is cdof_i' (S'KS) cdof_j, S'KS = [[u'Ku, (Ku)'], [Ku, K]]: a spatial
    matrix of the contact's body, summed over subtrees and projected like mj_crb."""
    nl, k = cm.nlimit, ROWS_PER_CONTACT
    D = d[nl:].reshape(cm.ncon, k, *d.shape[1:])        # every contact at once
    da, db, dc = D[:, 0], D[:, 1], D[:, 2]
    kn, knt, kt = da + db + dc, jac.friction0 * (da - db), jac.friction0_sq * (da + db)
    nx, nz = jac.normal[:, 0], jac.normal[:, 1]
    tx, tz = jac.tangent[:, 0], jac.tangent[:, 1]
    kxx = kn * nx * nx + 2 * knt * nx * tx + kt * tx * tx
    kxz = kn * nx * nz + knt * (nx * tz + tx * nz) + kt * tx * tz
    kzz = kn * nz * nz + 2 * knt * nz * tz + kt * tz * tz
    ux, uz = jac.lever[:, 0], jac.lever[:, 1]
    kux, kuz = kxx * ux + kxz * uz, kxz * ux + kzz * uz
    spatial = materialize(jnp.stack([ux * kux + uz * kuz, kux, kuz, kxx, kxz, kzz], axis=1))
    out = crb_entries(cm, jac.cd, subtree_sums(cm, _per_body(cm, spatial)))
    for n, j in enumerate(cm.limit_dof):
        out[(int(j), int(j))] = out[(int(j), int(j))] + d[n]   # (+-1)^2 d
    return out


class Constraints(NamedTuple):
    """MuJoCo's efc_* arrays for all potential rows: one row per limited joint, then three rows
    per contact. MuJoCo's pyramid has four rows per contact, J_n +- f0 J_t1 and J_n +- f1 J_t2,
    but J_t2 is zero for a planar model (no dof moves along y), so its last two rows are both
    J_n, with equal R and aref: they are kept here as ONE row of weight 2 (same cost, force and
    Hessian, a quarter fewer rows)."""

    J: Array        # (nefc, nv) dense (for the stage checks; the solver uses ``jac``)
    pos: Array      # (nefc,) efc_pos (distance)
    margin: Array   # (nefc,)
    mask: Array     # (nefc,) bool: the row exists in MuJoCo's efc (limit or contact active)
    R: Array        # (nefc,) regulariser of one MuJoCo row
    D: Array        # (nefc,) 1 / R (0 on masked rows), of one MuJoCo row
    weight: np.ndarray  # (nefc,) how many identical MuJoCo rows the row stands for (static)
    aref: Array     # (nefc,) reference acceleration
    imp: Array      # (nefc,) impedance
    jac: RowJacobian  # J in factored form


def impedance(solimp: np.ndarray, pos: Array, margin: Array) -> Array:
    """MuJoCo's getimpedance: sigmoid from d0 to dwidth over |pos - margin| in [0, width],
    for per-row constants ``solimp`` (nefc, 5)."""
    d0, dmax, width, mid, power = (solimp[:, k] for k in range(5))
    x = jnp.abs(pos - margin) / bcast(np.where(width > 0, width, 1.0), pos)
    xc = jnp.clip(x, 0.0, 1.0)
    # y = a x^p below the midpoint, 1 - b (1-x)^p above; p = 2 by default (an integer power is
    # computed by multiplication, as exact as C's pow).
    a = 1.0 / mid ** (power - 1)
    b = 1.0 / (1.0 - mid) ** (power - 1)
    if np.all(power == power[0]) and float(power[0]).is_integer():
        p = int(power[0])
        lo, hi = xc ** p, (1.0 - xc) ** p
    else:
        lo, hi = xc ** bcast(power, xc), (1.0 - xc) ** bcast(power, xc)
    y = jnp.where(xc <= bcast(mid, xc), bcast(a, xc) * lo, 1.0 - bcast(b, xc) * hi)
    y = jnp.where(bcast(power == 1, xc), xc, y)
    y = jnp.where(x >= 1, 1.0, jnp.where(x <= 0, 0.0, y))
    imp = bcast(d0, y) + y * bcast(dmax - d0, y)
    flat = (d0 == dmax) | (width <= MJ_MINVAL)
    return jnp.where(bcast(flat, imp), bcast(0.5 * (d0 + dmax), imp), imp)


def _row_constants(cm: CheetahModel) -> dict[str, np.ndarray]:
    """Per-row constants: solref/solimp -> K, B; row weights (diagApprox and the pyramid's R
    scale depend on friction: :class:`Dynamics`)."""
    nl, nc, k = cm.nlimit, cm.ncon, ROWS_PER_CONTACT
    solref = np.concatenate([cm.limit_solref, np.repeat(np.repeat(cm.cap_solref, 2, 0), k, 0)])
    solimp = np.concatenate([cm.limit_solimp, np.repeat(np.repeat(cm.cap_solimp, 2, 0), k, 0)])
    tc, dr = solref[:, 0], solref[:, 1]
    dmax = solimp[:, 1]
    return {
        "solimp": solimp,
        # Standard solref: K = 1 / (dmax^2 tc^2 dr^2), B = 2 / (dmax tc).
        "K": 1.0 / np.maximum(MJ_MINVAL, dmax**2 * tc**2 * dr**2),
        "B": 2.0 / np.maximum(MJ_MINVAL, dmax * tc),
        "weight": np.concatenate([np.ones(nl), np.tile([1.0, 1.0, 2.0], nc)]),
    }


def constraints(cm: CheetahModel, kin: Kinematics, cd: Array, con: Contacts,
                qpos: Array, qvel: Array, dyn: Dynamics | None = None) -> Constraints:
    """mj_makeConstraint + mj_makeImpedance + mj_referenceConstraint for the fixed rows."""
    rc = _row_constants(cm)
    dyn = resolve(cm, dyn, qpos[0])
    k = ROWS_PER_CONTACT
    # Joint limits (mj_instantiateLimit): lower dist = q - lo (J = +1), upper hi - q (J = -1).
    q = take(qpos, cm.limit_dof)
    lo_dist = q - bcast(cm.limit_lo, q)
    hi_dist = bcast(cm.limit_hi, q) - q
    lmargin = jnp.broadcast_to(bcast(cm.limit_margin, q), q.shape)
    lower = lo_dist < lmargin
    lim_pos = jnp.where(lower, lo_dist, hi_dist)
    lim_mask = lower | (hi_dist < lmargin)
    # Contacts (mj_instantiateContact): frame rows of the point Jacobian, pyramid edges.
    rx, rz = con.pos[:, 0] - kin.c0[0], con.pos[:, 1] - kin.c0[1]
    jac = RowJacobian(cd, jnp.stack([rz, -rx], axis=1), con.normal, con.tangent,
                      jnp.where(lower, 1.0, -1.0).astype(q.dtype), dyn.friction0,
                      dyn.friction0_sq)
    eye = np.eye(cm.nv)
    J = jnp.stack([jac_mul(cm, jac, bcast(eye[j], qpos)) for j in range(cm.nv)], axis=1)
    pos = jnp.concatenate([lim_pos, jnp.repeat(con.dist, k, axis=0)])
    margin = bcast(np.concatenate([cm.limit_margin,
                                   np.repeat(np.repeat(cm.cap_includemargin, 2), k)]), pos)
    mask = jnp.concatenate([lim_mask, jnp.repeat(con.active, k, axis=0)])
    imp = impedance(rc["solimp"], pos, margin)
    r0 = jnp.maximum(MJ_MINVAL, (1 - imp) * dyn.diagA / imp)
    R = r0 * dyn.pyramid_scale
    D = jnp.where(mask, 1.0 / R, 0.0)
    vel = jac_mul(cm, jac, qvel)
    aref = -bcast(rc["B"], vel) * vel - bcast(rc["K"], imp) * imp * (pos - margin)
    pos, mask, R, D, aref, imp, jac = materialize((pos, mask, R, D, aref, imp, jac))
    return Constraints(J, pos, jnp.broadcast_to(margin, pos.shape), mask, R, D, rc["weight"],
                       aref, imp, jac)


# ------------------------------------------------------------------ tree-sparse LDL' (MuJoCo)
def tree_factor(cm: CheetahModel, A: Array | dict[tuple[int, int], Array]
                ) -> tuple[dict[tuple[int, int], Array], Array]:
    """mj_factorI: A = L' D L for a matrix with the dof tree's sparsity (M, M + J'DJ, M + hB:
    a contact or limit couples only the dofs on one path to the root). Eliminating from the
    leaves up creates no fill-in, so the factor costs ~100 multiply-adds on scalars, which
    vectorise across a vmapped batch (a LAPACK call per matrix does not).
    ``A`` is a dense matrix or its lower-triangle entries {(i, j): value} (:func:`tree_pairs`).
    Returns the strictly-lower entries L[(k, i)] and 1 / D."""
    a = dict(A) if isinstance(A, dict) else {(i, j): A[i, j] for i, j in tree_pairs(cm)}
    inv_d: list[Any] = [None] * cm.nv
    for k in range(cm.nv - 1, -1, -1):
        inv_d[k] = 1.0 / a[(k, k)]
        for i in _path(cm, k)[1:]:
            tmp = a[(k, i)] * inv_d[k]
            for j in _path(cm, i):
                a[(i, j)] = a[(i, j)] - tmp * a[(k, j)]
        for i in _path(cm, k)[1:]:
            a[(k, i)] = a[(k, i)] * inv_d[k]
        a, inv_d[k] = materialize((a, inv_d[k]))
    lower = {(k, i): a[(k, i)] for k in range(cm.nv) for i in _path(cm, k)[1:]}
    return lower, jnp.stack(inv_d)


def tree_solve(cm: CheetahModel, factor: tuple[dict[tuple[int, int], Array], Array],
               b: Array) -> Array:
    """mj_solveLD: x = (L' D L)^-1 b."""
    lower, inv_d = factor
    x = [b[i] for i in range(cm.nv)]
    for k in range(cm.nv - 1, -1, -1):      # x <- L^-T x
        for i in _path(cm, k)[1:]:
            x[i] = x[i] - lower[(k, i)] * x[k]
    x = materialize([x[i] * inv_d[i] for i in range(cm.nv)])  # x <- D^-1 x
    for k in range(cm.nv):                  # x <- L^-1 x
        for i in _path(cm, k)[1:]:
            x[k] = x[k] - lower[(k, i)] * x[i]
    return materialize(jnp.stack(x))


def _path(cm: CheetahModel, i: int) -> list[int]:
    """dof i and its ancestors, from i up to the root."""
    out = []
    while i >= 0:
        out.append(i)
        i = cm.dof_parent[i]
    return out


# ----------------------------------------------------------------------------------- solver
class Solution(NamedTuple):
    qacc: Array
    force: Array        # efc_force per row (a weight-2 row carries the force of both rows)
    active: Array       # (nefc,) the rows whose quadratic cost is on (efc_state QUADRATIC)
    iterations: Array   # Newton iterations taken (mjData.solver_niter)


class _Point(NamedTuple):
    """A line-search point (mjPrimalPnt): step length, cost change from alpha = 0, and the
    first and second derivatives of the cost along the search direction."""

    alpha: Array
    cost: Array
    d0: Array
    d1: Array


def _where(c: Array, a: Any, b: Any) -> Any:
    return jax.tree.map(lambda x, y: jnp.where(c, x, y), a, b)


def _dot(a: Array, b: Array) -> Array:
    return lead_sum(a * b)


# Line-search phases. One loop iteration evaluates the points the previous one chose (carried
# through the loop, so XLA cannot fuse the choosing logic into the per-row evaluation, where it
# would be recomputed for every row): one-sided search, a bracket's midpoint, or the Newton
# points from the bracket's two ends.
_ONESIDED, _MIDPOINT, _ENDS, _DONE = 0, 1, 2, 3


def line_search(cm: CheetahModel, Dw: Array, jar: Array, Jv: Array, slope0: Array,
                curv0: Array, snorm: Array, scale: Array, run: Array, slope_terms: Array
                ) -> tuple[Array, Array]:
    """PrimalSearch: MuJoCo's line search along a direction v of the piecewise-quadratic cost,
    step for step (Newton steps from alpha = 0 while the slope keeps its sign, then a bracketed
    search of midpoints and Newton points from both ends), with its convergence test
    |slope| < tolerance * ls_tolerance * |v| / scale and its evaluation cap. Returns the step
    length and the cost improvement (both 0 where MuJoCo returns 0).

    ``slope0`` = v'(Ma - qfrc_smooth), ``curv0`` = v'Mv / 2 (the Gauss term's polynomial),
    ``jar`` = J a - aref and ``Jv`` per row. Each environment runs its own search (as under
    vmap); the loop runs while any that ``run`` has not finished.

    In float32 the slope carries rounding far above MuJoCo's float64 test (its terms are
    ~1e3 and the test ~1e-8), so the test could never pass and every search would run to the
    cap; there the test is floored at the slope's rounding error, 8 eps times the magnitude of
    its terms (``slope_terms`` = sum |v| (|Ma| + |qfrc_smooth|), plus the rows' and the
    curvature's). float64 keeps MuJoCo's test unchanged."""
    # Each row's cost along the line, q0 + alpha q1 + alpha^2 q2 where it is active, stacked so
    # that one masked reduction per point sums all three.
    quad = materialize(jnp.stack([0.5 * Dw * jar * jar, Dw * jar * Jv, 0.5 * Dw * Jv * Jv],
                                 axis=1))  # (rows, 3, *batch)
    cost_at_0 = materialize(lead_sum(jnp.where(jar < 0, quad[:, 0], 0.0)))
    gtol = cm.tolerance * cm.ls_tolerance * snorm / scale
    if jar.dtype == jnp.float32:
        terms = (slope_terms + lead_sum(jnp.abs(quad[:, 1]))
                 + 2 * (curv0 + lead_sum(quad[:, 2])))
        gtol = jnp.maximum(gtol, 8 * float(jnp.finfo(jnp.float32).eps) * terms)

    def ev(alpha: Array) -> _Point:
        """PrimalEval: the cost change and derivatives at ``alpha`` (per-env, or with one
        leading axis for several points at once)."""
        lead = alpha.ndim - jar.ndim + 1
        rows = (slice(None),) + (None,) * lead
        on = jar[rows] + alpha * Jv[rows] < 0                      # (rows, *points)
        t = lead_sum(jnp.where(on[:, :, None] if lead else on[:, None],
                               quad[:, None] if lead else quad, 0.0))
        t0, t1, t2 = (t[:, k] for k in range(3)) if lead else t
        t1, t2 = slope0 + t1, curv0 + t2
        cost = alpha * alpha * t2 + alpha * t1 + (t0 - cost_at_0)
        d1 = 2 * t2
        return _Point(alpha, cost, 2 * alpha * t2 + t1, jnp.where(d1 <= 0, MJ_MINVAL, d1))

    def newton(p: _Point) -> Array:
        return p.alpha - p.d0 / p.d1

    def converged(p: _Point) -> Array:
        return jnp.abs(p.d0) < gtol

    def update_bracket(p: _Point, cands: list[_Point]) -> tuple[_Point, Array]:
        moved = jnp.zeros_like(run)
        for c in cands:
            take = (((p.d0 < 0) & (c.d0 < 0) & (p.d0 < c.d0))
                    | ((p.d0 > 0) & (c.d0 > 0) & (p.d0 > c.d0)))
            p = _where(take, c, p)
            moved = moved | take
        return p, moved

    def midpoint(p1: _Point, p2: _Point) -> Array:
        return 0.5 * (p1.alpha + p2.alpha)

    zero = jnp.zeros_like(snorm)
    p0 = ev(zero)
    p1 = ev(newton(p0))
    first = converged(p1) & ((p1.alpha == 0) | (p1.cost < 0))
    tiny = snorm < MJ_MINVAL
    phase = jnp.where(~run | tiny | first, _DONE, _ONESIDED)
    result = (jnp.where(first & ~tiny, p1.alpha, zero), jnp.where(first & ~tiny, -p1.cost, zero))
    sign = jnp.where(p1.d0 < 0, 1.0, -1.0).astype(snorm.dtype)
    no = jnp.zeros_like(run)
    pending = jnp.stack([newton(p1), zero])
    # phase, evaluations so far, bracket ends p1 and p2, their Newton points, the ends that
    # moved (whose Newton points are pending), the points to evaluate next, the result
    # (zeros_like of the data, not jnp.full: under shard_map the carry must vary like it)
    init = (phase, jnp.zeros_like(snorm, dtype=jnp.int32) + 2, p1, p0, p1, p1, (no, no),
            pending, result)

    def body(carry: tuple) -> tuple:
        phase, n, p1, p2, p1next, p2next, (b1, b2), pending, result = carry
        capped = n >= cm.ls_iterations
        both = ev(pending)
        e = jax.tree.map(lambda x: x[0], both)

        # One-sided (e: the Newton point from p1). C checks the slope of p1 before evaluating.
        one = phase == _ONESIDED
        cont = (p1.d0 * sign <= -gtol) & ~capped
        o_done = (cont & converged(e) & (e.cost < 0)) | (~cont & capped)
        o_p1 = _where(cont, e, p1)
        o = (jnp.where(o_done, _DONE, jnp.where(cont, _ONESIDED, _MIDPOINT)), n + 1, o_p1,
             _where(cont, p1, p2), _where(cont, p1next, e), _where(cont, p2next, p1), (no, no),
             jnp.stack([jnp.where(cont, newton(e), midpoint(p1, p2)), zero]),
             (o_p1.alpha, -o_p1.cost))

        # Midpoint (e: the bracket's midpoint): a converged candidate ends the search, else
        # the ends move to better candidates and their Newton points are evaluated next.
        cands = [p1next, p2next, e]
        best, best_cost, found = e, jnp.zeros_like(e.cost), no
        for c in cands:
            pick = converged(c) & (~found | (c.cost < best_cost))
            best = _where(pick, c, best)
            best_cost = jnp.where(pick, c.cost, best_cost)
            found = found | pick
        m_p1, m_b1 = update_bracket(p1, cands)
        m_p2, m_b2 = update_bracket(p2, cands)
        stuck = ~found & ~m_b1 & ~m_b2
        m = (jnp.where(found | stuck, _DONE, _ENDS), n + 1, m_p1, m_p2, p1next, p2next,
             (m_b1, m_b2), jnp.stack([newton(m_p1), newton(m_p2)]),
             _where(found, (best.alpha, -best.cost), (e.alpha, -e.cost)))
        # out of evaluations (checked before the midpoint): the better end, if it improves
        use1 = (p1.cost <= p2.cost) & (p1.cost < 0)
        use2 = ~use1 & (p2.cost <= p1.cost) & (p2.cost < 0)
        m_capped = (jnp.full_like(phase, _DONE), n, p1, p2, p1next, p2next, (no, no), pending,
                    (jnp.where(use1, p1.alpha, jnp.where(use2, p2.alpha, zero)),
                     jnp.where(use1, -p1.cost, jnp.where(use2, -p2.cost, zero))))
        m = _where((phase == _MIDPOINT) & capped, m_capped, m)

        # Ends: the Newton points of the ends that moved; then the next midpoint.
        second = jax.tree.map(lambda x: x[1], both)
        x = (jnp.full_like(phase, _MIDPOINT), n + b1.astype(jnp.int32) + b2.astype(jnp.int32),
             p1, p2, _where(b1, e, p1next), _where(b2, second, p2next), (no, no),
             jnp.stack([midpoint(p1, p2), zero]), result)

        new = _where(one, o, _where(phase == _MIDPOINT, m, x))
        return _where(phase != _DONE, new, carry)

    final = jax.lax.while_loop(lambda c: jnp.any(c[0] != _DONE), body, init)
    return final[-1]


def solve(cm: CheetahModel, M: dict[tuple[int, int], Array], M_factor: tuple,
          qfrc_smooth: Array, efc: Constraints, qacc_init: Array) -> Solution:
    """mj_solNewton: minimise over qacc MuJoCo's primal cost

        cost(a) = 1/2 (a - a0)'M(a - a0) + sum_rows w D/2 min(0, J a - aref)^2

    (a0 = qacc_smooth) with MuJoCo's iterates and stopping rule, so that where MuJoCo stops
    short of the exact minimiser this stops at the same point. Each iteration: the Newton
    direction on the current active set (H = M + J'DJ, factored tree-sparse), MuJoCo's line
    search along it (:func:`line_search`), then stop when the scaled cost improvement is
    positive and below ``opt.tolerance``, or the scaled gradient is, or the Newton decrement
    (the next step's predicted improvement) is. Before the first step: stop if the warmstart
    already meets the gradient test and either the duality-gap certificate or the decrement.
    The scale is 1 / trace(M): one island holds every dof (model.py checks one kinematic tree).
    Checked against MuJoCo in float64: the same iteration count on every state of the L1 set.

    ``M`` is the mass matrix's tree-sparse entries (:func:`mass_entries`) and ``M_factor`` its
    :func:`tree_factor` (for the duality-gap certificate); products with J use
    its factored form (:class:`RowJacobian`). With trailing batch axes (see the module
    docstring) each environment iterates until it stops, as under ``vmap``: the loop runs
    while any has not, and the others keep their result.
    """
    jac, aref = efc.jac, efc.aref
    Dw = efc.D * bcast(efc.weight, efc.D)
    tol = cm.tolerance
    scale = jnp.asarray(1.0 / sum(M[(i, i)] for i in range(cm.nv)))

    def active_of(jar: Array) -> Array:
        return (jar < 0) & (Dw > 0)

    def gradient(Ma: Array, jar: Array) -> tuple[Array, Array]:
        """The active set and grad = Ma - qfrc_smooth - J'force."""
        act = active_of(jar)
        return act, Ma - qfrc_smooth + jac_t_mul(cm, jac, jnp.where(act, Dw, 0.0) * jar)

    def newton_solve(act: Array, grad: Array) -> Array:
        """H^-1 grad with H = M + J'DJ on the active rows (MuJoCo's Mgrad)."""
        JDJ = constraint_hessian(cm, jac, jnp.where(act, Dw, 0.0))
        H = {ij: M[ij] + JDJ[ij] for ij in M}
        return tree_solve(cm, tree_factor(cm, H), grad)

    def decrement(grad: Array, Hgrad: Array) -> Array:
        return jnp.maximum(0.0, 0.5 * scale * _dot(grad, Hgrad))

    def norm(x: Array) -> Array:
        return jnp.sqrt(_dot(x, x))

    def body(carry: tuple) -> tuple:
        a, Ma, jar, _act, _grad, Hgrad, it, done = carry
        run = running(carry)
        v = -Hgrad
        Mv = tree_matvec(cm, M, v)
        Jv = jac_mul(cm, jac, v)
        alpha, improvement = line_search(
            cm, Dw, jar, Jv, _dot(v, Ma - qfrc_smooth), 0.5 * _dot(v, Mv), norm(v), scale, run,
            slope_terms=_dot(jnp.abs(v), jnp.abs(Ma) + jnp.abs(qfrc_smooth)))
        moved = alpha != 0
        a_new, Ma_new, jar_new = a + alpha * v, Ma + alpha * Mv, jar + alpha * Jv
        act_new, grad_new = gradient(Ma_new, jar_new)
        Hgrad_new = newton_solve(act_new, grad_new)
        improvement = scale * improvement
        stop = (((improvement > 0) & (improvement < tol)) | (scale * norm(grad_new) < tol)
                | (decrement(grad_new, Hgrad_new) < tol))
        new = (a_new, Ma_new, jar_new, act_new, grad_new, Hgrad_new, it + 1, stop)
        # a zero step ends the iteration where it is (and is not counted)
        new = _where(moved, new, (*carry[:-1], jnp.ones_like(done)))
        return _where(run, new, carry)

    def running(carry: tuple) -> Array:
        return (~carry[-1]) & (carry[-2] < cm.iterations)

    Ma0 = tree_matvec(cm, M, qacc_init)
    jar0 = jac_mul(cm, jac, qacc_init) - aref
    act0, grad0 = gradient(Ma0, jar0)
    Hgrad0 = newton_solve(act0, grad0)
    small = scale * norm(grad0) < tol
    gap = decrement(grad0, tree_solve(cm, M_factor, grad0)) < tol
    done0 = small & (gap | (decrement(grad0, Hgrad0) < tol))
    # zeros_like of the data (not jnp.zeros): under shard_map the carry must vary like it.
    init = (qacc_init, Ma0, jar0, act0, grad0, Hgrad0,
            jnp.zeros_like(qacc_init[0], dtype=jnp.int32), done0)
    a, _Ma, jar, act, *_, it, _done = jax.lax.while_loop(
        lambda c: jnp.any(running(c)), body, init)
    force = jnp.where(act, -efc.D * jar, 0.0)  # per MuJoCo row (unweighted)
    return Solution(a, force, act, it)


def warmstart(cm: CheetahModel, M: dict[tuple[int, int], Array], qfrc_smooth: Array,
              efc: Constraints, qacc_smooth: Array, qacc_warm: Array,
              use_warm: Array | bool = True) -> Array:
    """MuJoCo's warmstart(): start from the previous qacc unless qacc_smooth costs less. The
    start matters: MuJoCo stops within a tolerance, so its result depends on where it began."""
    Dw = efc.D * bcast(efc.weight, efc.D)

    def cost(a: Array) -> Array:
        jar = jac_mul(cm, efc.jac, a) - efc.aref
        return 0.5 * lead_sum((tree_matvec(cm, M, a) - 2 * qfrc_smooth) * a) + 0.5 * (
            lead_sum(Dw * jnp.minimum(jar, 0.0) ** 2))

    warm = materialize(use_warm & (cost(qacc_warm) <= cost(qacc_smooth)))
    return jnp.where(warm, qacc_warm, qacc_smooth)


# --------------------------------------------------------------------------- forward / step
class Forward(NamedTuple):
    """The mj_forward quantities the L1 component checks compare with MuJoCo."""

    kin: Kinematics
    M: Array            # (nv, nv) dense qM
    qfrc_bias: Array
    qfrc_passive: Array
    qfrc_actuator: Array
    qfrc_smooth: Array
    qacc_smooth: Array
    con: Contacts
    efc: Constraints
    sol: Solution
    qfrc_constraint: Array
    mass: dict          # qM's tree-sparse entries (what the solver and integrator use)


def forward(cm: CheetahModel, qpos: Array, qvel: Array, ctrl: Array,
            qacc_warm: Array | None = None, use_warm: Array | bool = True,
            dyn: Dynamics | None = None) -> Forward:
    """mj_forward: position, velocity, actuation and acceleration stages, then the solver
    (from the better of ``qacc_warm`` and qacc_smooth, as MuJoCo's warmstart). ``dyn``: the
    params' :class:`Dynamics` (default: the compiled model's)."""
    dyn = resolve(cm, dyn, qpos[0])
    kin = kinematics(cm, qpos, dyn)
    cd = cdof(cm, kin)
    inert = body_inertia(cm, kin, dyn)
    mass = mass_entries(cm, cd, inert, dyn)
    bias = bias_force(cm, kin, cd, inert, qvel, dyn)
    passive = passive_force(cm, qpos, qvel, dyn)
    act = actuator_force(cm, ctrl, dyn)
    smooth = passive - bias + act
    mass_factor = tree_factor(cm, mass)
    acc_smooth = tree_solve(cm, mass_factor, smooth)
    con = contacts(cm, kin)
    efc = constraints(cm, kin, cd, con, qpos, qvel, dyn)
    start = acc_smooth if qacc_warm is None else warmstart(cm, mass, smooth, efc, acc_smooth,
                                                           qacc_warm, use_warm)
    sol = solve(cm, mass, mass_factor, smooth, efc, start)
    qfrc_constraint = jac_t_mul(cm, efc.jac, sol.force * bcast(efc.weight, sol.force))
    return Forward(kin, dense(cm, mass), bias, passive, act, smooth, acc_smooth, con, efc, sol,
                   qfrc_constraint, mass)


def step(cm: CheetahModel, qpos: Array, qvel: Array, ctrl: Array,
         qacc_warm: Array | None = None, use_warm: Array | bool = True,
         dyn: Dynamics | None = None) -> tuple[Array, Array, Array]:
    """mj_step with the Euler integrator: the velocity update treats joint damping implicitly,
    qacc' = (M + h B)^-1 (qfrc_smooth + qfrc_constraint), then qvel += h qacc', and positions
    advance with the NEW velocity (semi-implicit), qpos += h qvel. Returns the new qpos, qvel
    and the constrained qacc (MuJoCo's warmstart for the next step)."""
    dyn = resolve(cm, dyn, qpos[0])
    fwd = forward(cm, qpos, qvel, ctrl, qacc_warm, use_warm, dyn)
    h = cm.timestep
    MhB = dict(fwd.mass)
    for i in range(cm.nv):
        MhB[(i, i)] = MhB[(i, i)] + dyn.damping_dt[i]
    qacc = tree_solve(cm, tree_factor(cm, MhB), fwd.qfrc_smooth + fwd.qfrc_constraint)
    qvel = qvel + h * qacc
    return qpos + h * qvel, qvel, fwd.sol.qacc
