"""The names of the verification layers, in the order the hierarchy runs them (defined once)."""

from __future__ import annotations

# The layers ``envport verify`` runs, lowest first.
LAYERS: tuple[str, ...] = ("property", "interaction", "rollout", "distribution",
                           "rollout_distribution")
# L4 (policy transfer) is run by ``envport transfer``, above every verify layer.
TRANSFER = "transfer"
HIERARCHY: tuple[str, ...] = (*LAYERS, TRANSFER)
LAYER_TITLES: dict[str, str] = {
    "property": "L1 property",
    "interaction": "L2 interaction",
    "rollout": "L3 rollout",
    "distribution": "distribution",
    "rollout_distribution": "rollout distribution",
    TRANSFER: "L4 transfer",
}
