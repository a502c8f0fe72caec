"""Gymnasium's ``half_cheetah.xml``, compiled by MuJoCo and read into planar constants.

Everything the JAX physics uses comes from the compiled ``mujoco.MjModel`` of the XML that ships
inside Gymnasium (never a copy that could drift). The JAX pipeline is specialised to what this
model is: a planar kinematic tree (slides in the x-z plane, hinges about y) whose capsules
collide with one plane. :func:`load` checks every assumption the specialisation relies on and
raises :class:`UnsupportedModelError` naming the one that fails, so a changed XML can never be
simulated silently wrong.

Planar conventions used throughout: 2-vectors are (x, z); an angle ``a`` is a rotation about +y,
mapping a local (x, z) to (cos a * x + sin a * z, -sin a * x + cos a * z) (MuJoCo's rotation about
+y); planar spatial vectors are (angular y, linear x, linear z).
"""

from __future__ import annotations

import contextlib
import os
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache

import numpy as np

# The versions this translation was verified against (pinned in pyproject.toml).
VERIFIED_VERSIONS = {"mujoco": "4.0.0", "gymnasium": "1.4.0"}

# MuJoCo's numerical constants (mjMINVAL, mjMINIMP, mjMAXIMP, mjMAXVAL in mjmodel.h/mjdata.h).
MJ_MINVAL = 1e-15
MJ_MINIMP = 0.0001
MJ_MAXIMP = 0.9999
MJ_MAXVAL = 1e10

_TOL = 1e-12  # how far from exact a "planar" quantity may be (rounding of compiled values)


# The model fields that are data (HalfCheetah's traced params: domain randomisation vmaps over
# them), by their MuJoCo names and shapes (counts as named on mujoco.MjModel and CheetahModel);
# everything else shapes the program and is static. actuator_gear is each motor's first gear
# component (the only one a joint motor has, checked), gravity is opt.gravity.
PARAM_SHAPES: dict[str, tuple[str | int, ...]] = {
    "body_mass": ("nbody",), "body_inertia": ("nbody", 3), "geom_friction": ("ngeom", 3),
    "dof_damping": ("nv",), "dof_armature": ("nv",), "jnt_stiffness": ("nv",),
    "actuator_gear": ("nu",), "gravity": (3,)}


def param_shape(model: object, name: str) -> tuple[int, ...]:
    """The shape of model param ``name`` for ``model`` (a CheetahModel or mujoco.MjModel)."""
    return tuple(int(getattr(model, d)) if isinstance(d, str) else d for d in PARAM_SHAPES[name])


class UnsupportedModelError(ValueError):
    """The compiled model breaks an assumption of the planar specialisation."""


class VersionWarning(UserWarning):
    """MuJoCo or Gymnasium differs from the versions the translation was verified against."""


def check_versions() -> None:
    """Warn (once per call site) when MuJoCo/Gymnasium are not the verified versions."""
    import gymnasium
    import mujoco

    found = {"mujoco": mujoco.__version__, "gymnasium": gymnasium.__version__}
    if found != VERIFIED_VERSIONS:
        warnings.warn(
            f"envport's halfcheetah was verified against mujoco {VERIFIED_VERSIONS['mujoco']} "
            f"and gymnasium {VERIFIED_VERSIONS['gymnasium']}; found mujoco {found['mujoco']} "
            f"and gymnasium {found['gymnasium']}. Results may differ from the verified "
            "reference; rerun `envport verify halfcheetah`.",
            VersionWarning, stacklevel=3)


@contextlib.contextmanager
def mujoco_warnings_to_python() -> Iterator[None]:
    """Route MuJoCo's C warnings to Python's ``warnings`` while the block runs.

    MuJoCo 4 warns that the XML's ``settotalmass`` is deprecated on every load and, by default,
    appends it to ``MUJOCO_LOG.TXT`` in the working directory; a library must not litter the
    user's directory, so the warning is re-issued as a Python warning instead.
    """
    import mujoco

    previous = mujoco.get_mju_user_warning()
    mujoco.set_mju_user_warning(
        lambda msg: warnings.warn(f"MuJoCo: {msg}", RuntimeWarning, stacklevel=2))
    try:
        yield
    finally:
        mujoco.set_mju_user_warning(previous)


def xml_path() -> str:
    """Gymnasium's own HalfCheetah XML (the file ``HalfCheetah-v5`` loads)."""
    import gymnasium

    return os.path.join(os.path.dirname(gymnasium.__file__), "envs", "mujoco", "assets",
                        "half_cheetah.xml")


def load_mj_model():  # -> mujoco.MjModel (mujoco is imported lazily)
    """A freshly compiled reference model (one to edit)."""
    import mujoco

    check_versions()
    with mujoco_warnings_to_python(), warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="MuJoCo: compiler attribute 'settotalmass'")
        return mujoco.MjModel.from_xml_path(xml_path())


@cache
def mj_model():  # -> mujoco.MjModel
    """The compiled reference model (cached: compiled once per process; never edit it)."""
    return load_mj_model()


def _y_angle(quat: np.ndarray, what: str) -> float:
    """Angle of a quaternion that must be a pure rotation about y."""
    w, x, y, z = (float(v) for v in quat)
    if abs(x) > _TOL or abs(z) > _TOL:
        raise UnsupportedModelError(f"{what} quaternion {quat} is not a rotation about y")
    return 2.0 * float(np.arctan2(y, w))


def _planar(vec: np.ndarray, what: str) -> np.ndarray:
    if abs(float(vec[1])) > _TOL:
        raise UnsupportedModelError(f"{what} {vec} leaves the x-z plane")
    return np.array([vec[0], vec[2]], dtype=np.float64)


def _require(ok: bool, message: str) -> None:
    if not ok:
        raise UnsupportedModelError(message)


@dataclass(frozen=True, eq=False)
class CheetahModel:
    """Planar constants of the compiled model (float64 numpy; the physics casts them).

    Bodies are indexed as in MuJoCo (0 is the world); joints and dofs coincide (hinge/slide only).
    """

    nbody: int
    nv: int
    nu: int
    body_parent: tuple[int, ...]
    body_pos: np.ndarray       # (nbody, 2) offset from the parent frame, in the parent frame
    body_angle: np.ndarray     # (nbody,) fixed rotation from the parent frame
    body_mass: np.ndarray      # (nbody,)
    body_ipos: np.ndarray      # (nbody, 2) centre of mass in the body frame
    body_iyy: np.ndarray       # (nbody,) moment of inertia about y through the centre of mass
    body_inertia: np.ndarray   # (nbody, 3) MuJoCo's principal moments (body_inertia)
    # Row y of each body's inertia frame (body_iquat as a matrix): I_yy = sum_k (r_k I_k) r_k for
    # any principal moments I, and the y-x / y-z products vanish for any I when r is a unit
    # axis (checked), so the principal moments can be data (params) without leaving the plane.
    body_iyy_row: np.ndarray   # (nbody, 3)
    body_dofs: tuple[tuple[int, ...], ...]  # dofs of each body in MuJoCo's joint order
    dof_body: np.ndarray       # (nv,)
    dof_parent: tuple[int, ...]  # MuJoCo's dof_parentid (-1 for the first dof)
    dof_is_hinge: np.ndarray   # (nv,) bool
    dof_axis: np.ndarray       # (nv, 2) slide axis in the joint's frame; hinges: (sign, 0)
    dof_anchor: np.ndarray     # (nv, 2) joint position in the body frame
    dof_ancestor: np.ndarray   # (nv, nv) bool: [i, j] when dof j is dof i or above it
    dof_armature: np.ndarray
    dof_damping: np.ndarray
    dof_stiffness: np.ndarray
    dof_springref: np.ndarray
    # The dof whose motion is a pure translation along x of the whole model, with nothing in the
    # world depending on x: the physics works relative to it (float32 keeps its precision at any
    # distance run) and adds it back only where absolute positions are reported.
    x_dof: int
    # Joint limits: one row per limited joint (at most one side can be active, checked below).
    limit_dof: np.ndarray      # (nlimit,)
    limit_lo: np.ndarray
    limit_hi: np.ndarray
    limit_margin: np.ndarray
    limit_solref: np.ndarray   # (nlimit, 2) after MuJoCo's refsafe clamp
    limit_solimp: np.ndarray   # (nlimit, 5) after MuJoCo's clamps
    limit_invweight: np.ndarray
    # Actuators: motors on one dof each.
    act_dof: np.ndarray
    act_gear: np.ndarray
    act_gain: np.ndarray
    act_ctrllimited: np.ndarray
    act_ctrlrange: np.ndarray  # (nu, 2)
    # Capsules that collide with the floor plane: two potential contacts each (the end spheres).
    cap_geom: np.ndarray       # (ncap,) MuJoCo geom ids
    cap_body: np.ndarray
    cap_pos: np.ndarray        # (ncap, 2) in the body frame
    cap_angle: np.ndarray      # (ncap,)
    cap_halflen: np.ndarray
    cap_radius: np.ndarray
    cap_friction: np.ndarray   # (ncap, 5) MuJoCo's contact friction vector
    # The geoms whose sliding friction the contact takes (mj_contactParam): the higher-priority
    # geom of the pair, else the maximum of both (as friction params are data, this is kept).
    cap_friction_geoms: tuple[tuple[int, ...], ...]
    cap_solref: np.ndarray     # (ncap, 2) after refsafe
    cap_solimp: np.ndarray     # (ncap, 5)
    cap_margin: np.ndarray     # detection margin
    cap_includemargin: np.ndarray  # margin - gap: a contact is a constraint when dist < this
    cap_invweight: np.ndarray  # translational invweight0 of the capsule's body (floor: 0)
    ngeom: int
    geom_friction: np.ndarray  # (ngeom, 3) MuJoCo's geom_friction (sliding, torsional, rolling)
    floor_geom: int
    floor_pos: np.ndarray      # (2,)
    floor_normal: np.ndarray   # (2,)
    # Options.
    timestep: float
    gravity: np.ndarray        # (2,)
    gravity3: np.ndarray       # (3,) MuJoCo's opt.gravity (y is 0: checked)
    impratio: float
    meaninertia: float
    iterations: int
    ls_iterations: int
    ls_tolerance: float
    tolerance: float
    qpos0: np.ndarray           # the configuration the body poses describe
    init_qpos: np.ndarray
    init_qvel: np.ndarray

    @property
    def ncap(self) -> int:
        return len(self.cap_geom)

    @property
    def ncon(self) -> int:
        return 2 * self.ncap

    @property
    def nlimit(self) -> int:
        return len(self.limit_dof)


def _solref(solref: np.ndarray, timestep: float) -> np.ndarray:
    """MuJoCo's getsolparam for the standard (positive) solref format, incl. refsafe."""
    _require(solref[0] > 0 and solref[1] > 0, f"solref {solref} is not in the standard format")
    return np.array([max(float(solref[0]), 2 * timestep), float(solref[1])])


def _solimp(solimp: np.ndarray) -> np.ndarray:
    s = np.array(solimp, dtype=np.float64)
    s[0] = min(MJ_MAXIMP, max(MJ_MINIMP, s[0]))
    s[1] = min(MJ_MAXIMP, max(MJ_MINIMP, s[1]))
    s[2] = max(0.0, s[2])
    s[3] = min(MJ_MAXIMP, max(MJ_MINIMP, s[3]))
    s[4] = max(1.0, s[4])
    return s


def _contact_params(m, g1: int, g2: int
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, int, tuple[int, ...]]:
    """MuJoCo's mj_contactParam for a geom pair: (friction[5], solref, solimp, condim, the geoms
    whose friction it takes)."""
    if m.geom_priority[g1] != m.geom_priority[g2]:
        g = g1 if m.geom_priority[g1] > m.geom_priority[g2] else g2
        fri, solref, solimp = m.geom_friction[g], m.geom_solref[g], m.geom_solimp[g]
        condim = int(m.geom_condim[g])
        sources: tuple[int, ...] = (int(g),)
    else:
        condim = int(max(m.geom_condim[g1], m.geom_condim[g2]))
        s1, s2 = float(m.geom_solmix[g1]), float(m.geom_solmix[g2])
        if s1 >= MJ_MINVAL and s2 >= MJ_MINVAL:
            mix = s1 / (s1 + s2)
        elif s1 < MJ_MINVAL and s2 < MJ_MINVAL:
            mix = 0.5
        else:
            mix = 0.0 if s1 < MJ_MINVAL else 1.0
        solref = mix * m.geom_solref[g1] + (1 - mix) * m.geom_solref[g2]
        solimp = mix * m.geom_solimp[g1] + (1 - mix) * m.geom_solimp[g2]
        fri = np.maximum(m.geom_friction[g1], m.geom_friction[g2])
        sources = (int(g1), int(g2))
    friction = np.array([fri[0], fri[0], fri[1], fri[2], fri[2]], dtype=np.float64)
    return (friction, np.asarray(solref, np.float64), np.asarray(solimp, np.float64), condim,
            sources)


def _check_options(m) -> None:
    import mujoco

    o = m.opt
    _require(o.integrator == mujoco.mjtIntegrator.mjINT_EULER, "integrator is not Euler")
    _require(o.solver == mujoco.mjtSolver.mjSOL_NEWTON, "solver is not Newton")
    _require(o.cone == mujoco.mjtCone.mjCONE_PYRAMIDAL, "friction cone is not pyramidal")
    _require(o.disableflags == 0 and o.enableflags == 0, "disable/enable flags are set")
    _require(o.noslip_iterations == 0, "noslip solver is enabled")
    # One kinematic tree: every constraint lands in one island holding all dofs, so the
    # solver's scale is 1 / trace(M) (mj_solPrimal's island scaling).
    _require(m.ntree == 1, "the model has more than one kinematic tree")
    _require(not np.any(o.wind) and o.density == 0
             and o.viscosity == 0, "fluid forces are enabled")
    _require(m.na == 0 and m.neq == 0 and m.ntendon == 0 and m.nflex == 0 and m.npair == 0
             and m.nexclude == 0 and m.nsensor == 0 and m.nplugin == 0,
             "the model has activations, equalities, tendons, flexes, explicit pairs, "
             "excludes, sensors or plugins")
    _require(not np.any(m.dof_frictionloss), "dof friction loss is set")
    _require(not np.any(m.body_gravcomp), "gravity compensation is set")
    _require(not np.any(m.jnt_stiffnesspoly) and not np.any(m.dof_dampingpoly),
             "nonlinear springs or dampers are set")


def _check_actuators(m) -> None:
    import mujoco

    _require(bool(np.all(m.actuator_trntype == mujoco.mjtTrn.mjTRN_JOINT)),
             "an actuator does not act on a joint")
    _require(bool(np.all(m.actuator_dyntype == mujoco.mjtDyn.mjDYN_NONE))
             and bool(np.all(m.actuator_gaintype == mujoco.mjtGain.mjGAIN_FIXED))
             and bool(np.all(m.actuator_biastype == mujoco.mjtBias.mjBIAS_NONE)),
             "an actuator is not a plain motor")
    _require(not np.any(m.actuator_forcelimited) and not np.any(m.jnt_actfrclimited),
             "actuator force limits are set")
    _require(not np.any(m.actuator_gear[:, 1:]), "an actuator gear has more than one component")
    _require(not np.any(m.actuator_damping) and not np.any(m.actuator_dampingpoly),
             "actuator damping is set")


def from_mjmodel(m) -> CheetahModel:
    """Read the planar constants of ``m``, checking every assumption of the specialisation."""
    import mujoco

    _check_options(m)
    _check_actuators(m)
    nbody, nv, nu = int(m.nbody), int(m.nv), int(m.nu)
    _require(m.nq == nv == m.njnt, "a joint is not a hinge or slide (nq != nv != njnt)")
    _require(bool(np.all(m.body_parentid[1:] < np.arange(1, nbody))), "bodies not in tree order")
    _require(bool(np.all(m.body_rootid[1:] == 1)), "the model has more than one kinematic tree")
    _require(not np.any(m.body_mocapid[1:] >= 0), "the model has mocap bodies")

    body_pos = np.array([_planar(p, f"body {b} position") for b, p in enumerate(m.body_pos)])
    body_angle = np.array([_y_angle(q, f"body {b}") for b, q in enumerate(m.body_quat)])
    body_ipos = np.array([_planar(p, f"body {b} centre of mass") for b, p in
                          enumerate(m.body_ipos)])
    body_iyy = np.zeros(nbody)
    body_iyy_row = np.zeros((nbody, 3))
    body_iyy_row[0, 1] = 1.0  # the world body (no inertia)
    for b in range(1, nbody):
        flat = np.zeros(9)
        mujoco.mju_quat2Mat(flat, m.body_iquat[b])
        rot = flat.reshape(3, 3)
        inertia = rot @ np.diag(m.body_inertia[b]) @ rot.T  # in the body frame
        # Planar motion (angular velocity along y) only sees I_yy; the y-x and y-z products of
        # inertia must vanish or the motion would leave the plane, and must keep vanishing when
        # the principal moments are changed (params): y is one of the principal axes.
        _require(abs(inertia[0, 1]) < 1e-9 and abs(inertia[1, 2]) < 1e-9,
                 f"body {b}'s inertia couples y with x or z")
        _require(np.sum(np.abs(rot[1]) > 1e-9) == 1,
                 f"body {b}'s y axis is not a principal axis of its inertia")
        body_iyy[b] = inertia[1, 1]
        body_iyy_row[b] = rot[1]

    dof_is_hinge = np.zeros(nv, bool)
    dof_axis = np.zeros((nv, 2))
    dof_anchor = np.zeros((nv, 2))
    for j in range(nv):
        _require(m.jnt_dofadr[j] == j and m.jnt_qposadr[j] == j, "joints and dofs not aligned")
        axis = m.jnt_axis[j] / np.linalg.norm(m.jnt_axis[j])
        dof_anchor[j] = _planar(m.jnt_pos[j], f"joint {j} position")
        if m.jnt_type[j] == mujoco.mjtJoint.mjJNT_HINGE:
            _require(abs(axis[0]) < _TOL and abs(axis[2]) < _TOL, f"hinge {j} is not about y")
            dof_is_hinge[j] = True
            dof_axis[j] = (np.sign(axis[1]), 0.0)
        elif m.jnt_type[j] == mujoco.mjtJoint.mjJNT_SLIDE:
            dof_axis[j] = _planar(axis, f"slide {j} axis")
        else:
            raise UnsupportedModelError(f"joint {j} is neither a hinge nor a slide")
    body_dofs = tuple(tuple(range(m.body_dofadr[b], m.body_dofadr[b] + m.body_dofnum[b]))
                      for b in range(nbody))
    dof_parent = tuple(int(p) for p in m.dof_parentid)
    ancestor = np.zeros((nv, nv), bool)
    for i in range(nv):
        j = i
        while j >= 0:
            ancestor[i, j] = True
            j = dof_parent[j]

    # Translation invariance along x: the first joint of the root body is an x slide in the world
    # frame and every world geom is a plane whose normal is orthogonal to x.
    x_dof = 0
    _require(not dof_is_hinge[x_dof] and m.jnt_bodyid[x_dof] == 1
             and abs(body_angle[1]) < _TOL and abs(dof_axis[x_dof][1]) < _TOL
             and abs(dof_axis[x_dof][0] - 1) < _TOL, "the first joint is not a slide along x")

    limited = [j for j in range(nv) if m.jnt_limited[j]]
    for j in limited:
        lo, hi = m.jnt_range[j]
        _require(2 * m.jnt_margin[j] < hi - lo,
                 f"joint {j}'s range is so narrow that both limits can be active")
    h = float(m.opt.timestep)

    geoms = range(int(m.ngeom))
    planes = [g for g in geoms if m.geom_type[g] == mujoco.mjtGeom.mjGEOM_PLANE]
    _require(len(planes) == 1 and m.geom_bodyid[planes[0]] == 0, "not exactly one world plane")
    floor = planes[0]
    floor_normal = _planar(_plane_normal(m.geom_quat[floor]), "floor normal")
    _require(abs(floor_normal[0]) < _TOL, "the floor is not horizontal (x would matter)")
    caps, friction, solref, solimp, margin, includemargin = [], [], [], [], [], []
    friction_geoms = []
    for g in geoms:
        if g == floor:
            continue
        collide = bool((m.geom_contype[g] & m.geom_conaffinity[floor])
                       or (m.geom_contype[floor] & m.geom_conaffinity[g]))
        for g2 in geoms:
            if g2 in (g, floor):
                continue
            pair = bool((m.geom_contype[g] & m.geom_conaffinity[g2])
                        or (m.geom_contype[g2] & m.geom_conaffinity[g]))
            _require(not pair, f"geoms {g} and {g2} collide with each other (only collisions "
                               "with the floor are supported)")
        if not collide:
            continue
        _require(m.geom_type[g] == mujoco.mjtGeom.mjGEOM_CAPSULE, f"geom {g} is not a capsule")
        fri, sref, simp, condim, sources = _contact_params(m, floor, g)
        _require(condim == 3, f"geom {g}'s contacts do not have condim 3")
        caps.append(g)
        friction.append(fri)
        friction_geoms.append(sources)
        solref.append(_solref(sref, h))
        solimp.append(_solimp(simp))
        mg = max(float(m.geom_margin[g]), float(m.geom_margin[floor]))
        gap = max(float(m.geom_gap[g]), float(m.geom_gap[floor]))
        _require(gap >= 0, "negative gap")
        margin.append(mg)
        includemargin.append(mg - gap)
    _require(not np.any(m.geom_adhesion), "adhesion is set")
    cap = np.array(caps)

    return CheetahModel(
        nbody=nbody, nv=nv, nu=nu,
        body_parent=tuple(int(p) for p in m.body_parentid),
        body_pos=body_pos, body_angle=body_angle, body_mass=np.array(m.body_mass),
        body_ipos=body_ipos, body_iyy=body_iyy, body_inertia=np.array(m.body_inertia),
        body_iyy_row=body_iyy_row, body_dofs=body_dofs,
        dof_body=np.array(m.dof_bodyid), dof_parent=dof_parent, dof_is_hinge=dof_is_hinge,
        dof_axis=dof_axis, dof_anchor=dof_anchor, dof_ancestor=ancestor,
        dof_armature=np.array(m.dof_armature), dof_damping=np.array(m.dof_damping),
        dof_stiffness=np.array(m.jnt_stiffness), dof_springref=np.array(m.qpos_spring),
        x_dof=x_dof,
        limit_dof=np.array(limited, dtype=np.int64),
        limit_lo=np.array([m.jnt_range[j][0] for j in limited]),
        limit_hi=np.array([m.jnt_range[j][1] for j in limited]),
        limit_margin=np.array([m.jnt_margin[j] for j in limited]),
        limit_solref=np.array([_solref(m.jnt_solref[j], h) for j in limited]),
        limit_solimp=np.array([_solimp(m.jnt_solimp[j]) for j in limited]),
        limit_invweight=np.array([m.dof_invweight0[m.jnt_dofadr[j]] for j in limited]),
        act_dof=np.array([m.jnt_dofadr[j] for j in m.actuator_trnid[:, 0]]),
        act_gear=np.array(m.actuator_gear[:, 0]), act_gain=np.array(m.actuator_gainprm[:, 0]),
        act_ctrllimited=np.array(m.actuator_ctrllimited, bool),
        act_ctrlrange=np.array(m.actuator_ctrlrange),
        cap_geom=cap, cap_body=np.array(m.geom_bodyid[cap]),
        cap_pos=np.array([_planar(m.geom_pos[g], f"geom {g} position") for g in cap]),
        cap_angle=np.array([_y_angle(m.geom_quat[g], f"geom {g}") for g in cap]),
        cap_halflen=np.array(m.geom_size[cap, 1]), cap_radius=np.array(m.geom_size[cap, 0]),
        cap_friction=np.array(friction), cap_friction_geoms=tuple(friction_geoms),
        cap_solref=np.array(solref),
        cap_solimp=np.array(solimp), cap_margin=np.array(margin),
        cap_includemargin=np.array(includemargin),
        # diagApprox's translational weight: capsule body + floor (the world body, weight 0).
        cap_invweight=np.array([m.body_invweight0[b, 0] + m.body_invweight0[0, 0]
                                for b in m.geom_bodyid[cap]]),
        ngeom=int(m.ngeom), geom_friction=np.array(m.geom_friction),
        floor_geom=floor, floor_pos=_planar(m.geom_pos[floor], "floor position"),
        floor_normal=floor_normal,
        timestep=h, gravity=_planar(m.opt.gravity, "gravity"),
        gravity3=np.array(m.opt.gravity), impratio=float(m.opt.impratio),
        meaninertia=float(m.stat.meaninertia), iterations=int(m.opt.iterations),
        ls_iterations=int(m.opt.ls_iterations), ls_tolerance=float(m.opt.ls_tolerance),
        tolerance=float(m.opt.tolerance),
        qpos0=np.array(m.qpos0), init_qpos=np.array(m.qpos0), init_qvel=np.zeros(nv),
    )


def _plane_normal(quat: np.ndarray) -> np.ndarray:
    """The plane's z axis in the world (MuJoCo's plane normal)."""
    import mujoco

    mat = np.zeros(9)
    mujoco.mju_quat2Mat(mat, quat)
    return mat.reshape(3, 3)[:, 2].copy()


@cache
def cheetah_model() -> CheetahModel:
    """The planar constants of Gymnasium's HalfCheetah (read once per process)."""
    return from_mjmodel(mj_model())
