"""L1: every opcode (243 base instructions besides HALT, 256 CB-prefixed) from random register,
flag and memory states, one instruction at a time, against PyBoy 2.8.1; the first case of each
opcode also compares IME, EI delay, HALT, IE, IF and the cycle counter."""

from __future__ import annotations

import random

import pytest

from envport.envs.gameboy.l1 import OPCODES, Pair, make_case, run_l1


def test_opcode_table_is_every_instruction_but_halt() -> None:
    assert len(OPCODES) == 499
    assert 0x76 not in OPCODES and 0xCB not in OPCODES and 0xD3 not in OPCODES


def test_every_opcode_matches_pyboy() -> None:
    n, failures = run_l1(per_opcode=3, seed=20261201)
    assert n == 3 * len(OPCODES)
    assert failures == [], "\n".join(failures[:20])


def test_harness_reports_a_difference() -> None:
    """The comparison can fail: the same case with the core started from another A."""
    pair = Pair()
    try:
        case = make_case(0x80, random.Random(3))  # add a, b
        assert pair.run(case, cpu_fields=False) is None
        bad = pair.run(case, cpu_fields=False, core_a_xor=0x01)
        assert bad is not None and "registers" in bad
    finally:
        pair.close()


@pytest.mark.slow
def test_every_opcode_matches_pyboy_many_states() -> None:
    n, failures = run_l1(per_opcode=40, seed=7, cpu_fields_every=True)
    assert n == 40 * len(OPCODES)
    assert failures == [], "\n".join(failures[:20])
