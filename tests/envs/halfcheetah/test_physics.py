"""L1 per stage: the JAX physics against C MuJoCo on states from real rollouts, in float64.

States: random and scripted rollouts of Gymnasium's HalfCheetah-v5 plus perturbations into
contact-rich (pressed, flipped), limit-hitting, fast and out-of-ctrlrange cases (checks.py).
Every stage must match within 1e-5 relative to the quantity's magnitude.
"""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from envport.envs.halfcheetah import SPEC, STAGES, checks, model, physics
from envport.envs.halfcheetah.model import cheetah_model

# The size SPEC.verification.components uses: one MuJoCo + JAX pass shared by every test.
N_STATES = 120


@pytest.fixture(scope="module")
def errors():
    return checks.stage_errors(N_STATES)


@pytest.mark.parametrize("stage", STAGES)
def test_stage_matches_mujoco_in_float64(stage, errors):
    checks.check_stage(stage, n=N_STATES)  # raises an AssertionError naming the worst state
    worst, _ = errors
    for name in checks.STAGES[stage]:
        if name in worst:
            assert worst[name][0] <= checks.RTOL


def test_the_samples_cover_contacts_limits_and_the_clamp(errors):
    _, s = errors
    ours = checks.jax_stages(s)
    n_contacts = ours["con_active"].sum(axis=1)
    assert n_contacts.max() >= 4 and (n_contacts == 0).any()
    assert ours["efc_mask"][:, :cheetah_model().nlimit].any(axis=1).mean() > 0.2
    assert (np.abs(s.ctrl) > 1).any()
    assert {o.split("+")[-1] for o in s.origin} >= {"pressed", "flipped", "limits", "fast"}


def test_components_are_wired_into_the_spec():
    assert set(SPEC.verification.components) == set(STAGES)
    SPEC.verification.components["mass_matrix"]()  # uses the cached samples: cheap


def test_a_missing_armature_is_caught(errors):
    """The stage check is sharp: dropping armature from qM (a trap of the spec) fails it."""
    _, s = errors
    cm = dataclasses.replace(cheetah_model(), dof_armature=np.zeros(9))
    ref = checks.mujoco_stages(dataclasses.replace(s, qpos=s.qpos[:4], qvel=s.qvel[:4],
                                                   ctrl=s.ctrl[:4], origin=s.origin[:4]))
    with jax.enable_x64(True):
        q = jnp.asarray(s.qpos[:4], jnp.float64)
        M = jax.vmap(lambda q: physics.mass_matrix(
            cm, k := physics.kinematics(cm, q), physics.cdof(cm, k),
            physics.body_inertia(cm, k)))(q)
    assert max(checks.rel_error(r["qM"], m) for r, m in zip(ref, np.asarray(M),
                                                             strict=True)) > 1e-3


def test_tree_factorisation_solves_the_mass_matrix(errors):
    _, s = errors
    cm = cheetah_model()
    with jax.enable_x64(True):
        q = jnp.asarray(s.qpos[0], jnp.float64)
        k = physics.kinematics(cm, q)
        M = physics.mass_matrix(cm, k, physics.cdof(cm, k), physics.body_inertia(cm, k))
        b = jnp.arange(1.0, 10.0, dtype=jnp.float64)
        x = physics.tree_solve(cm, physics.tree_factor(cm, M), b)
        np.testing.assert_allclose(np.asarray(M @ x), np.asarray(b), rtol=1e-10)


def test_factored_jacobian_products_match_the_dense_jacobian(errors):
    """The solver multiplies with J in factored form (tree passes, per-body J'DJ blocks); the
    dense J the stage checks compare with MuJoCo's efc_J must give the same products."""
    _, s = errors
    cm = cheetah_model()
    rng = np.random.default_rng(0)
    with jax.enable_x64(True):
        @jax.jit
        def products(q, v, u, x, f, d):
            kin = physics.kinematics(cm, q)
            cd = physics.cdof(cm, kin)
            efc = physics.constraints(cm, kin, cd, physics.contacts(cm, kin), q, v)
            return (efc.J, physics.jac_mul(cm, efc.jac, x), physics.jac_t_mul(cm, efc.jac, f),
                    physics.dense(cm, physics.constraint_hessian(cm, efc.jac, d)))

        for i in range(0, N_STATES, 15):
            nefc = cm.nlimit + physics.ROWS_PER_CONTACT * cm.ncon
            x, f, d = rng.normal(size=9), rng.normal(size=nefc), rng.uniform(0, 5, nefc)
            J, Jx, Jtf, JDJ = (np.asarray(a) for a in products(
                *(jnp.asarray(a, jnp.float64) for a in (s.qpos[i], s.qvel[i], s.ctrl[i], x, f,
                                                        d))))
            np.testing.assert_allclose(Jx, J @ x, rtol=1e-12, atol=1e-12)
            np.testing.assert_allclose(Jtf, J.T @ f, rtol=1e-12, atol=1e-12)
            np.testing.assert_allclose(JDJ, (J.T * d) @ J, rtol=1e-12, atol=1e-10)


def test_the_solver_stops_where_mujoco_stops(errors):
    """The solver takes MuJoCo's iterates and stops by its rule, not at the exact minimiser.
    With loose solver options (opt.tolerance 0.1, ls_tolerance 0.9, read from the model like
    every constant) MuJoCo stops visibly short of its minimiser on some states; the JAX
    solver must stop at the same point, after the same number of iterations."""
    import mujoco

    _, s = errors
    m = model.mj_model()
    d = mujoco.MjData(m)

    def mujoco_qacc(tolerance: float, ls_tolerance: float) -> tuple[np.ndarray, np.ndarray]:
        saved = m.opt.tolerance, m.opt.ls_tolerance
        m.opt.tolerance, m.opt.ls_tolerance = tolerance, ls_tolerance
        try:
            out, niter = [], []
            for q, v, u in zip(s.qpos, s.qvel, s.ctrl, strict=True):
                mujoco.mj_resetData(m, d)
                d.qpos[:], d.qvel[:], d.ctrl[:] = q, v, u
                mujoco.mj_forward(m, d)
                out.append(d.qacc.copy())
                niter.append(int(d.solver_niter[0]))
            return np.array(out), np.array(niter)
        finally:
            m.opt.tolerance, m.opt.ls_tolerance = saved

    loose, niter = mujoco_qacc(0.1, 0.9)
    exact, _ = mujoco_qacc(0.0, 0.01)
    cm = dataclasses.replace(cheetah_model(), tolerance=0.1, ls_tolerance=0.9)
    with jax.enable_x64(True):
        sol = jax.jit(jax.vmap(lambda q, v, u: physics.forward(cm, q, v, u,
                                                               jnp.zeros_like(v)).sol))(
            *(jnp.asarray(a, jnp.float64) for a in (s.qpos, s.qvel, s.ctrl)))
    qacc, iters = np.asarray(sol.qacc), np.asarray(sol.iterations)

    def rel(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return np.abs(a - b).max(axis=1) / np.maximum(1.0, np.abs(b).max(axis=1))

    short = rel(loose, exact) > 1e-6
    assert short.any(), "no state where MuJoCo stops short: the test would not discriminate"
    np.testing.assert_array_equal(iters, niter)
    assert rel(qacc, loose).max() < 1e-10


# Params are data: every state gets its own random masses, inertias, frictions, damping,
# armature, stiffness, gears and gravity (sample_params), written into MuJoCo's model state by
# state and vmapped with the states into the JAX pipeline (the same compiled program).
PARAM_SEED = 0


@pytest.fixture(scope="module")
def param_errors():
    return checks.stage_errors(N_STATES, param_seed=PARAM_SEED)


@pytest.mark.parametrize("stage", STAGES)
def test_stage_matches_mujoco_with_random_params(stage, param_errors):
    checks.check_stage(stage, n=N_STATES, param_seed=PARAM_SEED)
    worst, _ = param_errors
    assert worst["solver.iterations"][0] == 0  # the same Newton iterates as MuJoCo's


def test_random_params_reach_both_sides(param_errors):
    """The random-params checks are sharp: MuJoCo with the random params against the JAX
    pipeline with the compiled model's misses every stage the params enter."""
    _, s = param_errors
    ours = checks.jax_stages(dataclasses.replace(s, params=None))
    worst = checks.compare(s, checks.mujoco_stages(s), ours)
    for name in ("qM", "qfrc_bias", "qfrc_passive", "qfrc_actuator", "efc_R.contact", "qacc"):
        assert worst[name][0] > 1e-3, name
