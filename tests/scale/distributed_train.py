"""One process of a tiny CartPole PPO run (JAX backend), for test_distributed.py.

``python distributed_train.py OUT RESULT [COORDINATOR NUM_PROCESSES PROCESS_ID]``: with the last
three, ``jax.distributed.initialize`` first (each process with its own CPU device), so the
training mesh spans every process; without them, a single process with whatever devices
XLA_FLAGS gives it. Writes the final parameters' digest and the run's losses to RESULT.
"""

from __future__ import annotations

import hashlib
import json
import sys

import jax


def main(argv: list[str]) -> None:
    out, result = argv[0], argv[1]
    if len(argv) > 2:
        jax.distributed.initialize(coordinator_address=argv[2], num_processes=int(argv[3]),
                                   process_id=int(argv[4]))
    import numpy as np

    from envport.train import train

    r = train("cartpole", "jax", steps=4 * 8 * 4, seed=7, out=out, progress=False,
              config_overrides={"num_steps": 8, "num_minibatches": 2, "update_epochs": 2},
              chunk_updates=2)
    h = hashlib.sha256()
    for leaf in jax.tree_util.tree_leaves(r.params):
        h.update(np.ascontiguousarray(np.asarray(leaf)).tobytes())
    with open(result, "w") as f:
        json.dump({"process": jax.process_index(), "processes": jax.process_count(),
                   "devices": len(jax.devices()), "local_devices": len(jax.local_devices()),
                   "params_sha256": h.hexdigest(), "updates": r.updates,
                   "final_mean_return": r.final_mean_return}, f)


if __name__ == "__main__":
    main(sys.argv[1:])
