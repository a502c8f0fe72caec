"""Helpers for writing references that only some environments use (a reference batched from
Gymnasium environments, ...). Nothing in ``envport.core`` depends on them."""
