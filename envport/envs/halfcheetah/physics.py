"""MuJoCo's pipeline for the planar HalfCheetah, in JAX: one ``mj_step`` = :func:`step`.

The stages follow ``mj_step`` (Euler integrator) and are checked one by one against C MuJoCo
(tests/envs/halfcheetah/test_physics.py, ``SPEC.components``):

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
The Newton solver minimises MuJoCo's primal cost (see :func:`solve`) to its exact minimiser,
the point MuJoCo's Newton iterations converge to.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from envport.envs.halfcheetah.model import MJ_MINVAL, CheetahModel

Array = jax.Array


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


def rotate(angle: Array, v: Array) -> Array:
    """Rotate the planar vector(s) ``v`` (..., 2) by ``angle`` about +y."""
    c, s = jnp.cos(angle), jnp.sin(angle)
    return jnp.stack([c * v[..., 0] + s * v[..., 1], -s * v[..., 0] + c * v[..., 1]], axis=-1)


def kinematics(cm: CheetahModel, qpos: Array) -> Kinematics:
    """mj_kinematics: body frames from the root down, joints applied in MuJoCo's order."""
    dt = qpos.dtype
    xpos = [jnp.zeros(2, dt)]
    xang = [jnp.zeros((), dt)]
    anchor: list[Array] = [jnp.zeros(2, dt)] * cm.nv
    axis: list[Array] = [jnp.zeros(2, dt)] * cm.nv
    # Joints displace the body from its pose at qpos0 (body_pos/body_quat describe qpos0).
    q = qpos - jnp.asarray(cm.qpos0, dt)
    for b in range(1, cm.nbody):
        p = cm.body_parent[b]
        pos = xpos[p] + rotate(xang[p], jnp.asarray(cm.body_pos[b], dt))
        ang = xang[p] + cm.body_angle[b]
        for j in cm.body_dofs[b]:
            local_anchor = jnp.asarray(cm.dof_anchor[j], dt)
            anchor[j] = pos + rotate(ang, local_anchor)  # before the joint moves the frame
            if cm.dof_is_hinge[j]:
                # Rotate about the anchor: the anchor stays, the frame origin swings around it.
                ang = ang + cm.dof_axis[j][0] * q[j]
                pos = anchor[j] - rotate(ang, local_anchor)
            else:
                axis[j] = rotate(ang, jnp.asarray(cm.dof_axis[j], dt))
                if j != cm.x_dof:  # the x slide is added back by the caller (see Kinematics)
                    pos = pos + axis[j] * q[j]
        xpos.append(pos)
        xang.append(ang)
    xpos_a, xang_a = jnp.stack(xpos), jnp.stack(xang)
    com = xpos_a + rotate(xang_a, jnp.asarray(cm.body_ipos, dt))
    mass = jnp.asarray(cm.body_mass, dt)
    c0 = jnp.sum(mass[1:, None] * com[1:], axis=0) / jnp.sum(mass[1:])
    cap_ang = take(xang_a, cm.cap_body) + jnp.asarray(cm.cap_angle, dt)
    cap_pos = take(xpos_a, cm.cap_body) + rotate(take(xang_a, cm.cap_body),
                                                 jnp.asarray(cm.cap_pos, dt))
    cap_axis = jnp.stack([jnp.sin(cap_ang), jnp.cos(cap_ang)], axis=-1)
    return Kinematics(q[cm.x_dof], xpos_a, xang_a, com, jnp.stack(anchor), jnp.stack(axis),
                      cap_pos, cap_axis, c0)


def take(x: Array, index: np.ndarray) -> Array:
    """x[index] for a static index, as static slices: an index array's dtype would follow the
    x64 mode it was first converted in, which breaks when float32 and float64 runs share a
    process."""
    return jnp.stack([x[int(i)] for i in index])


def rotation_matrix(angle: Array) -> Array:
    """The 3x3 world rotation (MuJoCo's xmat, row-major) of a frame at ``angle`` about y."""
    c, s = jnp.cos(angle), jnp.sin(angle)
    z, o = jnp.zeros_like(c), jnp.ones_like(c)
    return jnp.stack([c, z, s, z, o, z, -s, z, c], axis=-1).reshape(*jnp.shape(angle), 3, 3)


def to_world(kin: Kinematics, p: Array) -> Array:
    """Relative planar point(s) (..., 2) -> world 3-D positions (..., 3) (y = 0)."""
    return jnp.stack([p[..., 0] + kin.x, jnp.zeros_like(p[..., 0]), p[..., 1]], axis=-1)


# ----------------------------------------------------------------- spatial algebra (planar)
def cdof(cm: CheetahModel, kin: Kinematics) -> Array:
    """(nv, 3) motion subspaces about ``c0`` (MuJoCo's cdof): hinge s*(1, r_z, -r_x) with
    r = c0 - anchor (the velocity at c0 of a unit rotation about the anchor); slide (0, axis)."""
    r = kin.c0 - kin.anchor
    sign = jnp.asarray(np.where(cm.dof_is_hinge, cm.dof_axis[:, 0], 0.0), r.dtype)
    hinge = sign[:, None] * jnp.stack([jnp.ones_like(r[:, 0]), r[:, 1], -r[:, 0]], axis=-1)
    slide = jnp.concatenate([jnp.zeros_like(r[:, :1]), kin.axis], axis=-1)
    return jnp.where(jnp.asarray(cm.dof_is_hinge)[:, None], hinge, slide)


def cross_motion(v: Array, m: Array) -> Array:
    """v x m for planar motion vectors (MuJoCo's mju_crossMotion restricted to the plane)."""
    return jnp.stack([jnp.zeros_like(v[..., 0]),
                      v[..., 0] * m[..., 2] - v[..., 2] * m[..., 0],
                      -v[..., 0] * m[..., 1] + v[..., 1] * m[..., 0]], axis=-1)


def cross_force(v: Array, f: Array) -> Array:
    """v x* f for a planar motion vector and force (MuJoCo's mju_crossForce)."""
    return jnp.stack([v[..., 2] * f[..., 1] - v[..., 1] * f[..., 2],
                      v[..., 0] * f[..., 2],
                      -v[..., 0] * f[..., 1]], axis=-1)


def body_inertia(cm: CheetahModel, kin: Kinematics) -> Array:
    """(nbody, 3, 3) spatial inertia of each body about c0 (MuJoCo's cinert, planar part)."""
    dt = kin.com.dtype
    m = jnp.asarray(cm.body_mass, dt)
    r = kin.com - kin.c0
    iyy = jnp.asarray(cm.body_iyy, dt) + m * (r[:, 0] ** 2 + r[:, 1] ** 2)
    zero = jnp.zeros_like(m)
    rows = [iyy, m * r[:, 1], -m * r[:, 0],
            m * r[:, 1], m, zero,
            -m * r[:, 0], zero, m]
    return jnp.stack(rows, axis=-1).reshape(-1, 3, 3)


def mass_matrix(cm: CheetahModel, kin: Kinematics, cd: Array, inert: Array) -> Array:
    """mj_crb: composite inertias up the tree, M[i, j] = cdof_j . (Ic_body(i) cdof_i) for j on
    the path from dof i to the root; armature on the diagonal (the trap: it is part of qM)."""
    composite = [inert[b] for b in range(cm.nbody)]
    for b in range(cm.nbody - 1, 0, -1):
        p = cm.body_parent[b]
        if p > 0:
            composite[p] = composite[p] + composite[b]
    ic = jnp.stack([composite[b] for b in cm.dof_body])         # (nv, 3, 3)
    force = jnp.einsum("ikl,il->ik", ic, cd)                     # Ic_body(i) cdof_i
    lower = jnp.where(jnp.asarray(cm.dof_ancestor), force @ cd.T, 0.0)  # [i, j], j above i
    full = lower + lower.T - jnp.diag(jnp.diag(lower))
    return full + jnp.diag(jnp.asarray(cm.dof_armature, full.dtype))


def bias_force(cm: CheetahModel, kin: Kinematics, cd: Array, inert: Array,
               qvel: Array) -> Array:
    """mj_rne with flg_acc=0: Coriolis, centrifugal and gravity forces (qfrc_bias)."""
    dt = qvel.dtype
    cvel = [jnp.zeros(3, dt)]
    cacc = [jnp.concatenate([jnp.zeros(1, dt), -jnp.asarray(cm.gravity, dt)])]  # -gravity
    for b in range(1, cm.nbody):
        p = cm.body_parent[b]
        v, a = cvel[p], cacc[p]
        for j in cm.body_dofs[b]:
            # cdof_dot uses the velocity before this dof is added (as MuJoCo: v x v = 0 anyway).
            a = a + cross_motion(v, cd[j]) * qvel[j]
            v = v + cd[j] * qvel[j]
        cvel.append(v)
        cacc.append(a)
    frc = [jnp.zeros(3, dt)] + [
        inert[b] @ cacc[b] + cross_force(cvel[b], inert[b] @ cvel[b])
        for b in range(1, cm.nbody)]
    for b in range(cm.nbody - 1, 0, -1):
        p = cm.body_parent[b]
        if p > 0:
            frc[p] = frc[p] + frc[b]
    body_frc = jnp.stack([frc[b] for b in cm.dof_body])
    return jnp.sum(cd * body_frc, axis=-1)


def passive_force(cm: CheetahModel, qpos: Array, qvel: Array) -> Array:
    """mj_passive: joint springs -k (q - q_spring) and dampers -b qdot."""
    dt = qpos.dtype
    spring = -jnp.asarray(cm.dof_stiffness, dt) * (qpos - jnp.asarray(cm.dof_springref, dt))
    return spring - jnp.asarray(cm.dof_damping, dt) * qvel


def clamp_ctrl(cm: CheetahModel, ctrl: Array) -> Array:
    """MuJoCo clamps ctrl to ctrlrange before use (it never writes the clamped value back)."""
    lo = np.where(cm.act_ctrllimited, cm.act_ctrlrange[:, 0], -np.inf)
    hi = np.where(cm.act_ctrllimited, cm.act_ctrlrange[:, 1], np.inf)
    return jnp.clip(ctrl, jnp.asarray(lo, ctrl.dtype), jnp.asarray(hi, ctrl.dtype))


def actuator_force(cm: CheetahModel, ctrl: Array) -> Array:
    """mj_fwdActuation for motors: force = gain * clamp(ctrl), qfrc = gear * force."""
    dt = ctrl.dtype
    force = jnp.asarray(cm.act_gain, dt) * clamp_ctrl(cm, ctrl)
    scatter = np.zeros((cm.nv, cm.nu))  # gear-weighted map from actuators to dofs (static)
    scatter[cm.act_dof, np.arange(cm.nu)] = cm.act_gear
    return jnp.asarray(scatter, dt) @ force


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
    dt = kin.cap_pos.dtype
    seg = kin.cap_axis * jnp.asarray(cm.cap_halflen, dt)[:, None]
    ends = jnp.stack([kin.cap_pos + seg, kin.cap_pos - seg], axis=1).reshape(-1, 2)
    radius = jnp.asarray(np.repeat(cm.cap_radius, 2), dt)
    n = jnp.asarray(cm.floor_normal, dt)
    p0 = jnp.asarray(cm.floor_pos, dt) - jnp.stack([kin.x, jnp.zeros_like(kin.x)])
    dist = (ends - p0) @ n - radius
    pos = ends - n * (dist / 2 + radius)[:, None]
    axis = jnp.repeat(kin.cap_axis, 2, axis=0)
    # mju_makeFrame: y axis = capsule axis orthogonalised against the normal, normalised.
    t = axis - (axis @ n)[:, None] * n
    t = t / jnp.linalg.norm(t, axis=-1, keepdims=True)
    # Detected when dist <= margin, a constraint unless excluded for dist >= includemargin.
    include = jnp.asarray(np.repeat(np.minimum(cm.cap_includemargin, cm.cap_margin), 2), dt)
    active = dist < include
    return Contacts(dist, pos, jnp.broadcast_to(n, pos.shape), t, active,
                    np.repeat(cm.cap_body, 2))


def point_jacobian(cm: CheetahModel, kin: Kinematics, cd: Array, body: np.ndarray,
                   point: Array) -> Array:
    """(n, 2, nv) translational Jacobians (x, z rows) of points fixed to ``body`` (mj_jac)."""
    r = point - kin.c0                                   # (n, 2)
    # velocity at the point = v(c0) + omega y x r = v + omega (r_z, -r_x)
    jx = cd[None, :, 1] + cd[None, :, 0] * r[:, 1:2]
    jz = cd[None, :, 2] - cd[None, :, 0] * r[:, 0:1]
    on_path = jnp.asarray(np.stack([cm.dof_ancestor[_last_dof(cm, b)] for b in body]))
    return jnp.where(on_path[:, None, :], jnp.stack([jx, jz], axis=1), 0.0)


def _last_dof(cm: CheetahModel, body: int) -> int:
    """The deepest dof moving ``body``: its ancestor row is the body's kinematic path."""
    b = int(body)
    while not cm.body_dofs[b]:
        b = cm.body_parent[b]
    return cm.body_dofs[b][-1]


# ------------------------------------------------------------------------------ constraints
class Constraints(NamedTuple):
    """MuJoCo's efc_* arrays for all potential rows: one row per limited joint, then three rows
    per contact. MuJoCo's pyramid has four rows per contact, J_n +- f0 J_t1 and J_n +- f1 J_t2,
    but J_t2 is zero for a planar model (no dof moves along y), so its last two rows are both
    J_n, with equal R and aref: they are kept here as ONE row of weight 2 (same cost, force and
    Hessian, a quarter fewer rows)."""

    J: Array        # (nefc, nv)
    pos: Array      # (nefc,) efc_pos (distance)
    margin: Array   # (nefc,)
    mask: Array     # (nefc,) bool: the row exists in MuJoCo's efc (limit or contact active)
    R: Array        # (nefc,) regulariser of one MuJoCo row
    D: Array        # (nefc,) 1 / R (0 on masked rows), of one MuJoCo row
    weight: np.ndarray  # (nefc,) how many identical MuJoCo rows the row stands for (static)
    aref: Array     # (nefc,) reference acceleration
    imp: Array      # (nefc,) impedance


ROWS_PER_CONTACT = 3


def impedance(solimp: Array, pos: Array, margin: Array) -> Array:
    """MuJoCo's getimpedance: sigmoid from d0 to dwidth over |pos - margin| in [0, width]."""
    d0, dmax, width, mid, power = (solimp[..., k] for k in range(5))
    x = jnp.abs(pos - margin) / jnp.where(width > 0, width, 1.0)
    xc = jnp.clip(x, 0.0, 1.0)
    # y = a x^p below the midpoint, 1 - b (1-x)^p above; p = 2 by default.
    a = 1.0 / mid ** (power - 1)
    b = 1.0 / (1.0 - mid) ** (power - 1)
    y = jnp.where(xc <= mid, a * xc ** power, 1.0 - b * (1.0 - xc) ** power)
    y = jnp.where(power == 1, xc, y)
    y = jnp.where(x >= 1, 1.0, jnp.where(x <= 0, 0.0, y))
    imp = d0 + y * (dmax - d0)
    flat = (d0 == dmax) | (width <= MJ_MINVAL)
    return jnp.where(flat, 0.5 * (d0 + dmax), imp)


def _row_constants(cm: CheetahModel) -> dict[str, np.ndarray]:
    """Per-row constants: solref/solimp -> K, B; diagApprox; R scale; row weights."""
    nl, nc, k = cm.nlimit, cm.ncon, ROWS_PER_CONTACT
    fr = np.repeat(cm.cap_friction, 2, axis=0)           # (ncon, 5)
    tran = np.repeat(cm.cap_invweight, 2)                 # (ncon,)
    # diagApprox of a contact's first pyramid row, tran (1 + f0^2): R0 comes from it, and every
    # pyramid row then gets Rpy = 2 mu^2 R0 with mu = f0 sqrt(1 / impratio) (mj_makeImpedance).
    diag0 = tran * (1 + fr[:, 0] ** 2)
    solref = np.concatenate([cm.limit_solref, np.repeat(np.repeat(cm.cap_solref, 2, 0), k, 0)])
    solimp = np.concatenate([cm.limit_solimp, np.repeat(np.repeat(cm.cap_solimp, 2, 0), k, 0)])
    tc, dr = solref[:, 0], solref[:, 1]
    dmax = solimp[:, 1]
    return {
        "solimp": solimp,
        # Standard solref: K = 1 / (dmax^2 tc^2 dr^2), B = 2 / (dmax tc).
        "K": 1.0 / np.maximum(MJ_MINVAL, dmax**2 * tc**2 * dr**2),
        "B": 2.0 / np.maximum(MJ_MINVAL, dmax * tc),
        "diagA": np.concatenate([cm.limit_invweight, np.repeat(diag0, k)]),
        "friction": fr[:, :2],
        "pyramid_scale": np.concatenate([
            np.ones(nl), np.repeat(2 * fr[:, 0] ** 2 / max(MJ_MINVAL, cm.impratio), k)]),
        "weight": np.concatenate([np.ones(nl), np.tile([1.0, 1.0, 2.0], nc)]),
    }


def constraints(cm: CheetahModel, kin: Kinematics, cd: Array, con: Contacts,
                qpos: Array, qvel: Array) -> Constraints:
    """mj_makeConstraint + mj_makeImpedance + mj_referenceConstraint for the fixed rows."""
    dt = qpos.dtype
    rc = _row_constants(cm)
    nc, nv, k = cm.ncon, cm.nv, ROWS_PER_CONTACT
    # Joint limits (mj_instantiateLimit): lower dist = q - lo (J = +1), upper hi - q (J = -1).
    q = take(qpos, cm.limit_dof)
    lo_dist = q - jnp.asarray(cm.limit_lo, dt)
    hi_dist = jnp.asarray(cm.limit_hi, dt) - q
    lmargin = jnp.asarray(cm.limit_margin, dt)
    lower = lo_dist < lmargin
    lim_pos = jnp.where(lower, lo_dist, hi_dist)
    lim_mask = lower | (hi_dist < lmargin)
    onehot = jnp.asarray(np.eye(nv)[cm.limit_dof], dt)
    lim_J = jnp.where(lower, 1.0, -1.0).astype(dt)[:, None] * onehot
    # Contacts (mj_instantiateContact): frame rows of the point Jacobian, pyramid edges.
    jac = point_jacobian(cm, kin, cd, con.body, con.pos)                    # (nc, 2, nv)
    jn = jnp.einsum("ck,ckv->cv", con.normal, jac)
    jt = jnp.einsum("ck,ckv->cv", con.tangent, jac)
    f0 = jnp.asarray(rc["friction"][:, 0], dt)[:, None]
    con_J = jnp.stack([jn + f0 * jt, jn - f0 * jt, jn], axis=1).reshape(k * nc, nv)
    J = jnp.concatenate([lim_J, con_J])
    pos = jnp.concatenate([lim_pos, jnp.repeat(con.dist, k)])
    margin = jnp.concatenate([lmargin, jnp.asarray(
        np.repeat(np.repeat(cm.cap_includemargin, 2), k), dt)])
    mask = jnp.concatenate([lim_mask, jnp.repeat(con.active, k)])
    imp = impedance(jnp.asarray(rc["solimp"], dt), pos, margin)
    diag = jnp.asarray(rc["diagA"], dt)
    r0 = jnp.maximum(MJ_MINVAL, (1 - imp) * diag / imp)
    R = r0 * jnp.asarray(rc["pyramid_scale"], dt)
    D = jnp.where(mask, 1.0 / R, 0.0)
    vel = J @ qvel
    aref = -jnp.asarray(rc["B"], dt) * vel - jnp.asarray(rc["K"], dt) * imp * (pos - margin)
    return Constraints(J, pos, margin, mask, R, D, rc["weight"], aref, imp)


# ------------------------------------------------------------------ tree-sparse LDL' (MuJoCo)
def tree_factor(cm: CheetahModel, A: Array) -> tuple[dict[tuple[int, int], Array], Array]:
    """mj_factorI: A = L' D L for a matrix with the dof tree's sparsity (M, M + J'DJ, M + hB:
    a contact or limit couples only the dofs on one path to the root). Eliminating from the
    leaves up creates no fill-in, so the factor costs ~100 multiply-adds on scalars, which
    vectorise across a vmapped batch (a LAPACK call per matrix does not).
    Returns the strictly-lower entries L[(k, i)] and 1 / D."""
    a = {(i, j): A[i, j] for i in range(cm.nv) for j in _path(cm, i)}
    inv_d = [None] * cm.nv
    for k in range(cm.nv - 1, -1, -1):
        inv_d[k] = 1.0 / a[(k, k)]
        for i in _path(cm, k)[1:]:
            tmp = a[(k, i)] * inv_d[k]
            for j in _path(cm, i):
                a[(i, j)] = a[(i, j)] - tmp * a[(k, j)]
        for i in _path(cm, k)[1:]:
            a[(k, i)] = a[(k, i)] * inv_d[k]
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
    x = [x[i] * inv_d[i] for i in range(cm.nv)]  # x <- D^-1 x
    for k in range(cm.nv):                  # x <- L^-1 x
        for i in _path(cm, k)[1:]:
            x[k] = x[k] - lower[(k, i)] * x[i]
    return jnp.stack(x)


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
    iterations: Array   # Newton iterations taken


# Step lengths tried when a full Newton step does not lower the cost (rare: far from the
# solution, or the active set changes a lot). Halving 12 times is 2.4e-4 of the step.
_BACKTRACK = tuple(0.5**k for k in range(13))


def solve(cm: CheetahModel, M: Array, qfrc_smooth: Array, efc: Constraints,
          qacc_init: Array, max_iter: int = 20, polish: bool = True) -> Solution:
    """mj_solNewton's problem: minimise over qacc

        cost(a) = 1/2 (a - a0)'M(a - a0) + sum_rows w D/2 min(0, J a - aref)^2,

    MuJoCo's primal formulation (a0 = qacc_smooth). The cost is strictly convex and piecewise
    quadratic, so its minimiser is unique: it is what MuJoCo's Newton iteration converges to,
    whatever path each takes. Here each iteration is a full Newton step on the current active
    set (the exact minimiser of that quadratic piece: H = M + J'DJ, factored tree-sparse), kept
    if it lowers the cost, else backtracked. When a step leaves the active set unchanged the
    point minimises its own piece, so the gradient vanishes and it is THE solution (exact, not
    within a tolerance). ``polish`` then takes one more Newton step on the final active set: zero
    in exact arithmetic, in float32 it removes most of the error of the last ill-conditioned
    solve (iterative refinement). The gradient is MuJoCo's Ma - qfrc_smooth - qfrc_constraint.
    """
    J, aref = efc.J, efc.aref
    Dw = efc.D * jnp.asarray(efc.weight, efc.D.dtype)

    def residual(a: Array) -> Array:
        return J @ a - aref

    def active_of(jar: Array) -> Array:
        return (jar < 0) & (Dw > 0)

    def cost(a: Array, jar: Array) -> Array:
        gauss = 0.5 * (M @ a - 2 * qfrc_smooth) @ a  # (a - a0)'M(a - a0)/2 up to a constant
        return gauss + 0.5 * jnp.sum(Dw * jnp.minimum(jar, 0.0) ** 2)

    def newton_step(a: Array, act: Array, jar: Array) -> Array:
        Dact = jnp.where(act, Dw, 0.0)
        grad = M @ a - qfrc_smooth + J.T @ (Dact * jar)
        H = M + (J.T * Dact) @ J
        return -tree_solve(cm, tree_factor(cm, H), grad)

    def body(carry: tuple) -> tuple:
        a, jar, act, c, it, _done = carry
        v = newton_step(a, act, jar)
        Jv = J @ v
        # cost(a + t v) for every trial t at once (cheap: the rows are already projected).
        t = jnp.asarray(_BACKTRACK, a.dtype)
        jar_t = jar[None, :] + t[:, None] * Jv[None, :]
        vMv, vg = v @ (M @ v), v @ (M @ a - qfrc_smooth)
        c_t = (c + t * vg + 0.5 * t**2 * vMv
               + 0.5 * jnp.sum(Dw * (jnp.minimum(jar_t, 0.0) ** 2
                                     - jnp.minimum(jar, 0.0) ** 2), axis=1))
        better = c_t < c
        k = jnp.argmax(better)  # the longest step that lowers the cost
        ok = better[k]
        step = jnp.where(ok, t[k], 0.0)
        a_new = a + step * v
        jar_new = jar + step * Jv
        act_new = active_of(jar_new)
        # Converged: a full step that left the active set unchanged, or no step lowers the cost.
        done = ((step == 1.0) & jnp.all(act_new == act)) | ~ok
        return a_new, jar_new, act_new, jnp.where(ok, c_t[k], c), it + 1, done

    def cond(carry: tuple) -> Array:
        return (~carry[5]) & (carry[4] < max_iter)

    jar0 = residual(qacc_init)
    # zeros_like of the data (not jnp.zeros): under shard_map the carry must vary like it.
    init = (qacc_init, jar0, active_of(jar0), cost(qacc_init, jar0),
            jnp.zeros_like(qacc_init[0], dtype=jnp.int32),
            jnp.zeros_like(qacc_init[0], dtype=bool))
    a, jar, act, _c, it, _done = jax.lax.while_loop(cond, body, init)
    if polish:
        a = a + newton_step(a, act, jar)
        jar = residual(a)
    force = jnp.where(act, -efc.D * jar, 0.0)  # per MuJoCo row (unweighted)
    return Solution(a, force, act, it)


def warmstart(M: Array, qfrc_smooth: Array, efc: Constraints, qacc_smooth: Array,
              qacc_warm: Array, use_warm: Array | bool = True) -> Array:
    """MuJoCo's warmstart(): start from the previous qacc if its cost is lower than that of
    qacc_smooth (fewer Newton steps; the solution does not depend on the start)."""
    Dw = efc.D * jnp.asarray(efc.weight, efc.D.dtype)

    def cost(a: Array) -> Array:
        jar = efc.J @ a - efc.aref
        return 0.5 * (M @ a - 2 * qfrc_smooth) @ a + 0.5 * jnp.sum(
            Dw * jnp.minimum(jar, 0.0) ** 2)

    return jnp.where(use_warm & (cost(qacc_warm) < cost(qacc_smooth)), qacc_warm, qacc_smooth)


# --------------------------------------------------------------------------- forward / step
class Forward(NamedTuple):
    """The mj_forward quantities the L1 component checks compare with MuJoCo."""

    kin: Kinematics
    M: Array
    qfrc_bias: Array
    qfrc_passive: Array
    qfrc_actuator: Array
    qfrc_smooth: Array
    qacc_smooth: Array
    con: Contacts
    efc: Constraints
    sol: Solution
    qfrc_constraint: Array


def forward(cm: CheetahModel, qpos: Array, qvel: Array, ctrl: Array,
            qacc_warm: Array | None = None, use_warm: Array | bool = True) -> Forward:
    """mj_forward: position, velocity, actuation and acceleration stages, then the solver
    (from the better of ``qacc_warm`` and qacc_smooth, as MuJoCo's warmstart)."""
    kin = kinematics(cm, qpos)
    cd = cdof(cm, kin)
    inert = body_inertia(cm, kin)
    M = mass_matrix(cm, kin, cd, inert)
    bias = bias_force(cm, kin, cd, inert, qvel)
    passive = passive_force(cm, qpos, qvel)
    act = actuator_force(cm, ctrl)
    smooth = passive - bias + act
    acc_smooth = tree_solve(cm, tree_factor(cm, M), smooth)
    con = contacts(cm, kin)
    efc = constraints(cm, kin, cd, con, qpos, qvel)
    start = acc_smooth if qacc_warm is None else warmstart(M, smooth, efc, acc_smooth, qacc_warm,
                                                           use_warm)
    sol = solve(cm, M, smooth, efc, start)
    qfrc_constraint = efc.J.T @ (sol.force * jnp.asarray(efc.weight, sol.force.dtype))
    return Forward(kin, M, bias, passive, act, smooth, acc_smooth, con, efc, sol,
                   qfrc_constraint)


def step(cm: CheetahModel, qpos: Array, qvel: Array, ctrl: Array,
         qacc_warm: Array | None = None, use_warm: Array | bool = True
         ) -> tuple[Array, Array, Array]:
    """mj_step with the Euler integrator: the velocity update treats joint damping implicitly,
    qacc' = (M + h B)^-1 (qfrc_smooth + qfrc_constraint), then qvel += h qacc', and positions
    advance with the NEW velocity (semi-implicit), qpos += h qvel. Returns the new qpos, qvel
    and the constrained qacc (MuJoCo's warmstart for the next step)."""
    fwd = forward(cm, qpos, qvel, ctrl, qacc_warm, use_warm)
    h = cm.timestep
    MhB = fwd.M + h * jnp.diag(jnp.asarray(cm.dof_damping, qpos.dtype))
    qacc = tree_solve(cm, tree_factor(cm, MhB), fwd.qfrc_smooth + fwd.qfrc_constraint)
    qvel = qvel + h * qacc
    return qpos + h * qvel, qvel, fwd.sol.qacc
