"""Argument checks shared by the ``envport`` subcommands: bad input fails before any work, with
the flag named (argparse types exit 2 by themselves; the checks raise ValueError, which every
command turns into exit 2)."""

from __future__ import annotations

import argparse
import os
from pathlib import Path


def parse_options(items: list[str] | None) -> dict[str, str]:
    options = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ValueError(f"-o takes KEY=VALUE, got {item!r}")
        if key in options:
            raise ValueError(f"-o {key} given twice")
        options[key] = value
    return options


def check_output(path: str | None, flag: str, folder: bool = False) -> None:
    """Fail before the work when ``path`` (a file, or with ``folder`` a folder to create) cannot
    be written: its nearest existing parent must be a writable folder."""
    if path is None:
        return
    target = Path(path)
    if folder and target.exists() and not target.is_dir():
        raise ValueError(f"{flag} {path}: exists and is not a folder")
    if not folder and target.is_dir():
        raise ValueError(f"{flag} {path}: is a folder, expected a file name")
    parent = target if folder else target.parent
    while not parent.exists():
        parent = parent.parent
    if not folder and parent != target.parent:
        raise ValueError(f"{flag} {path}: folder {target.parent} does not exist")
    if not parent.is_dir() or not os.access(parent, os.W_OK | os.X_OK):
        raise ValueError(f"{flag} {path}: {parent} is not a writable folder")


def positive_float(text: str) -> float:
    """argparse type: a number > 0."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be positive, got {value:g}")
    return value


def alpha(text: str) -> float:
    """argparse type: a significance level, 0 < alpha < 0.5."""
    value = positive_float(text)
    if value >= 0.5:
        raise argparse.ArgumentTypeError(f"must be below 0.5 (a test's significance level), "
                                         f"got {value:g}")
    return value


def positive_int(text: str) -> int:
    """argparse type: an integer >= 1 (argparse names the flag and exits 2 otherwise)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def seed_int(text: str) -> int:
    """argparse type: a seed, 0 <= seed < 2**63."""
    from envport.core.seeds import check_seed

    try:
        return check_seed(int(text))
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e) if text.strip().lstrip("-").isdigit()
                                         else f"expected an integer, got {text!r}") from None
