"""Built-in environments: one folder each, discovered by :mod:`envport.core.registry`."""
