"""PPO's hyperparameters (no JAX here: environment folders import this to declare their
training settings)."""

from __future__ import annotations

import dataclasses
from typing import Any


@dataclasses.dataclass(frozen=True)
class PPOConfig:
    """PPO hyperparameters. ``total_steps`` counts environment steps (agent steps)."""

    num_envs: int = 4
    num_steps: int = 128  # rollout length per environment per update
    total_steps: int = 500_000
    lr: float = 2.5e-4
    anneal_lr: bool = True  # linear decay to 0 over the run (per update, as PureJaxRL)
    gamma: float = 0.99
    gae_lambda: float = 0.95
    clip_eps: float = 0.2  # clips the policy ratio and the value change
    update_epochs: int = 4
    num_minibatches: int = 4
    ent_coef: float = 0.01
    vf_coef: float = 0.5
    max_grad_norm: float = 0.5
    network: str = "mlp"  # "mlp" or "gru"
    hidden_sizes: tuple[int, ...] = (64, 64)  # actor and critic MLPs (separate weights)
    gru_size: int = 128  # GRU width (network="gru"): embedding Dense + GRU before the MLPs
    seed: int = 0

    @property
    def batch_size(self) -> int:
        return self.num_envs * self.num_steps

    @property
    def num_updates(self) -> int:
        return self.total_steps // self.batch_size

    def to_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d["hidden_sizes"] = list(self.hidden_sizes)
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> PPOConfig:
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = set(d) - known
        if unknown:
            raise ValueError(f"unknown PPO hyperparameter(s) {sorted(unknown)}; "
                             f"known: {', '.join(sorted(known))}")
        d = dict(d)
        if "hidden_sizes" in d:
            d["hidden_sizes"] = tuple(int(h) for h in d["hidden_sizes"])
        return cls(**d)

    def check(self, devices: int) -> None:
        """Raise ValueError naming the first problem (before anything is built)."""
        positive = ("num_envs", "num_steps", "total_steps", "update_epochs", "num_minibatches",
                    "gru_size")
        for name in positive:
            if int(getattr(self, name)) < 1:
                raise ValueError(f"{name} must be at least 1, got {getattr(self, name)}")
        if self.network not in ("mlp", "gru"):
            raise ValueError(f"network must be 'mlp' or 'gru', got {self.network!r}")
        if self.total_steps < self.batch_size:
            raise ValueError(
                f"steps={self.total_steps} is less than one batch (num_envs * num_steps = "
                f"{self.num_envs} * {self.num_steps} = {self.batch_size}): nothing to train")
        if self.num_envs % devices:
            raise ValueError(f"num_envs={self.num_envs} must be a multiple of the {devices} "
                             "devices the batch is split over")
        local_envs = self.num_envs // devices
        if self.network == "gru" and local_envs % self.num_minibatches:
            raise ValueError(
                f"with a GRU, minibatches are made of whole environments: num_envs per device "
                f"({local_envs}) must be a multiple of num_minibatches={self.num_minibatches}")
        if self.network == "mlp" and (local_envs * self.num_steps) % self.num_minibatches:
            raise ValueError(
                f"the per-device batch ({local_envs * self.num_steps}) must be a multiple of "
                f"num_minibatches={self.num_minibatches}")


