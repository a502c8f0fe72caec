"""HalfCheetah's subtle physics mutants, for the rollout-distribution layer.

Params are data (``HalfCheetahParams`` leaves), so a mutant is the translation built with one
model or task constant changed by 1-10%: ``HalfCheetah(**params)``.
"""

from __future__ import annotations

from typing import Any


def param_mutants() -> dict[str, dict[str, Any]]:
    """Ten mutants: friction, damping, armature and gear by 1-2%, the control-cost weight by 5%,
    the reset noise scale by 10% (name -> ``HalfCheetah(**params)`` keywords)."""
    from envport.envs.halfcheetah.model import cheetah_model

    cm = cheetah_model()
    return {
        "friction +2%": {"geom_friction": cm.geom_friction * 1.02},
        "friction -2%": {"geom_friction": cm.geom_friction * 0.98},
        "damping +2%": {"dof_damping": cm.dof_damping * 1.02},
        "damping -2%": {"dof_damping": cm.dof_damping * 0.98},
        "armature +2%": {"dof_armature": cm.dof_armature * 1.02},
        "gear +1%": {"actuator_gear": cm.act_gear * 1.01},
        "gear -2%": {"actuator_gear": cm.act_gear * 0.98},
        "ctrl_cost_weight +5%": {"ctrl_cost_weight": 0.105},
        "ctrl_cost_weight -5%": {"ctrl_cost_weight": 0.095},
        "reset_noise_scale +10%": {"reset_noise_scale": 0.11},
    }
