"""L1, one instruction at a time against PyBoy 2.8.1: every opcode (the 244 base instructions and
the 256 CB-prefixed ones) from random register, flag and memory states.

Harness (spec 3.1): both emulators run the project's ``idle`` ROM, which spins with interrupts
off. A case writes ``di ; <instruction> ; jp 0x0200`` into WRAM at 0xC100, the registers through
PyBoy's ``register_file`` (the core's ``set_registers``) and the bytes the instruction reads, sets
PC = 0xC100 and ticks one frame on both. The code ends in the park loop at 0x0200 (``jr .``,
which changes no register or flag), so the registers, WRAM and HRAM after the frame are the
instruction's results. Taken jumps, calls and returns are aimed at the second loop (0x0210), RST
at the loop in its own vector, so PC tells which way they went. On chosen cases PyBoy's saved
state is parsed for the CPU fields the register file does not show (IME, EI delay, HALT, IE,
IF) and the cycle counter, which shows that the instruction took the same number of cycles.

Left out: the 11 opcodes that are no instruction (PyBoy stalls on them, see the README) and
HALT with interrupts off and none enabled, which PyBoy (and the core) never leave; HALT is
checked by the frame lock-step tests (cputest stage 3).
"""

from __future__ import annotations

import io
import random
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from envport.envs.gameboy.build_roms import rom_path
from envport.envs.gameboy.lockstep import close_at_exit, make_core, make_pyboy, pyboy_registers

UNUSED = frozenset({0xD3, 0xDB, 0xDD, 0xE3, 0xE4, 0xEB, 0xEC, 0xED, 0xF4, 0xFC, 0xFD})
#: Opcode numbers as PyBoy counts them: 0x00-0xFF base, 0x100-0x1FF the CB-prefixed ones.
OPCODES: tuple[int, ...] = tuple(
    op for op in range(0x200)
    if op >= 0x100 or (op not in UNUSED and op not in (0xCB, 0x76))
)
CODE = 0xC100
PARK, REST = 0x0200, 0x0210
DATA = 0xD000  # pointers of (HL), (BC), (DE), (a16) land in D000-D7FF
STACK_LO, STACK_HI = 0xD800, 0xDF00

LENGTHS_2 = frozenset({
    0x06, 0x0E, 0x10, 0x16, 0x18, 0x1E, 0x20, 0x26, 0x28, 0x2E, 0x30, 0x36, 0x38, 0x3E, 0xC6,
    0xCE, 0xD6, 0xDE, 0xE0, 0xE6, 0xE8, 0xEE, 0xF0, 0xF6, 0xF8, 0xFE,
})
LENGTHS_3 = frozenset({
    0x01, 0x08, 0x11, 0x21, 0x31, 0xC2, 0xC3, 0xC4, 0xCA, 0xCC, 0xCD, 0xD2, 0xD4, 0xDA, 0xDC,
    0xEA, 0xFA,
})
JR = frozenset({0x18, 0x20, 0x28, 0x30, 0x38})
JP_CALL = frozenset({0xC2, 0xC3, 0xC4, 0xCA, 0xCC, 0xCD, 0xD2, 0xD4, 0xDA, 0xDC})
RETS = frozenset({0xC0, 0xC8, 0xC9, 0xD0, 0xD8, 0xD9})
POPS = frozenset({0xC1, 0xD1, 0xE1, 0xF1})
PUSHES_RST = frozenset({0xC5, 0xD5, 0xE5, 0xF5, 0xC7, 0xCF, 0xD7, 0xDF, 0xE7, 0xEF, 0xF7, 0xFF})
A16_MEM = frozenset({0x08, 0xEA, 0xFA})
HIGH_MEM = frozenset({0xE0, 0xF0, 0xE2, 0xF2})
BC_MEM, DE_MEM = frozenset({0x02, 0x0A}), frozenset({0x12, 0x1A})
EDGE_BYTES = (0x00, 0x01, 0x0F, 0x10, 0x7F, 0x80, 0xFE, 0xFF)


@dataclass
class Case:
    opcode: int
    code: bytes
    #: A F B C D E HL SP, before the instruction
    registers: tuple[int, ...]
    memory: dict[int, int] = field(default_factory=dict)

    def describe(self) -> str:
        name = f"CB {self.opcode & 0xFF:02X}" if self.opcode >= 0x100 else f"{self.opcode:02X}"
        regs = " ".join(
            f"{n}={v:0{4 if n in ('HL', 'SP') else 2}X}"
            for n, v in zip(("A", "F", "B", "C", "D", "E", "HL", "SP"), self.registers, strict=True)
        )
        return f"opcode {name} (code {self.code.hex(' ')}) from {regs}"


def _byte(rng: random.Random) -> int:
    return rng.choice(EDGE_BYTES) if rng.random() < 0.4 else rng.randrange(256)


def _uses_hl_memory(op: int) -> bool:
    if op >= 0x100:
        return op & 7 == 6
    return op in (0x34, 0x35, 0x36, 0x22, 0x2A, 0x32, 0x3A) or (
        0x40 <= op < 0xC0 and op != 0x76 and (op & 7 == 6 or 0x70 <= op < 0x78)
    )


def make_case(op: int, rng: random.Random) -> Case:
    """A random state for ``op`` that keeps every access inside WRAM/HRAM and every control
    transfer on a loop of the host ROM."""
    a, b, c, d, e, h, low = (_byte(rng) for _ in range(7))
    f = rng.choice((0x00, 0x10, 0x20, 0x40, 0x80, 0xF0, rng.randrange(16) << 4))
    hl = (h << 8) | low
    sp = rng.randrange(0x10000)
    memory: dict[int, int] = {}
    base = op & 0xFF
    cb = op >= 0x100
    if cb:
        instr = bytes([0xCB, base])
    elif base in LENGTHS_3:
        instr = bytes([base, rng.randrange(256), rng.randrange(256)])
    elif base in LENGTHS_2:
        instr = bytes([base, _byte(rng)])
    else:
        instr = bytes([base])
    tail = bytes([0xC3, PARK & 0xFF, PARK >> 8])
    code_at = CODE + 1  # after the DI

    def pointer() -> int:
        return DATA + rng.randrange(0x800)

    if _uses_hl_memory(op):
        hl = pointer()
        memory[hl] = _byte(rng)
    if not cb:
        if base in BC_MEM:
            p = pointer()
            b, c = p >> 8, p & 0xFF
            memory[p] = _byte(rng)
        if base in DE_MEM:
            p = pointer()
            d, e = p >> 8, p & 0xFF
            memory[p] = _byte(rng)
        if base in A16_MEM:
            p = DATA + rng.randrange(0x7FF)
            instr = bytes([base, p & 0xFF, p >> 8])
            memory[p] = _byte(rng)
            memory[p + 1] = _byte(rng)
        if base in (0xE0, 0xF0):
            instr = bytes([base, 0x80 + rng.randrange(0x7F)])
            memory[0xFF00 | instr[1]] = _byte(rng)
        if base in (0xE2, 0xF2):
            c = 0x80 + rng.randrange(0x7F)
            memory[0xFF00 | c] = _byte(rng)
        if base in JP_CALL:
            instr = bytes([base, REST & 0xFF, REST >> 8])
        if base == 0xE9:
            hl = REST
        if base in JR:
            # Taken: land on a `jp REST` stub before or after the code.
            stub = code_at + 2 + 3 if rng.random() < 0.5 else CODE - 0x10
            instr = bytes([base, (stub - (code_at + 2)) & 0xFF])
            for i, v in enumerate((0xC3, REST & 0xFF, REST >> 8)):
                memory[stub + i] = v
        if base in RETS or base in POPS or base in PUSHES_RST or base in JP_CALL:
            sp = rng.randrange(STACK_LO, STACK_HI)
            memory[sp] = _byte(rng)
            memory[sp + 1] = _byte(rng)
            if base in RETS:
                memory[sp], memory[sp + 1] = REST & 0xFF, REST >> 8
    code = bytes([0xF3]) + instr + tail
    return Case(op, code, (a, f, b, c, d, e, hl, sp), memory)


def _pyboy_cpu_fields(pb: Any) -> dict[str, int]:
    """The CPU block at the start of PyBoy's save state (format version 29)."""
    buf = io.BytesIO()
    pb.save_state(buf)
    s = buf.getvalue()
    if s[0] != 29:
        raise RuntimeError(f"PyBoy save state version {s[0]}, the parser reads version 29")
    return {
        "interrupt_master_enable": s[18],
        "interrupt_enable_delay": s[19],
        "halted": s[20],
        "stopped": s[21],
        "interrupts_enabled_register": s[22],
        "interrupt_queued": s[23],
        "interrupts_flag_register": s[24],
        "cycles": int.from_bytes(s[25:33], "little"),
    }


def _core_cpu_fields(gb: Any) -> dict[str, int]:
    st = gb.cpu_state()
    return {k: int(st[k]) for k in (
        "interrupt_master_enable", "interrupt_enable_delay", "halted", "stopped",
        "interrupts_enabled_register", "interrupt_queued", "interrupts_flag_register", "cycles",
    )}


class Pair:
    """PyBoy and the core on the idle host ROM, in the same state."""

    def __init__(self) -> None:
        rom, boot = rom_path("idle"), rom_path("boot")
        self.pb = make_pyboy(rom, boot)
        close_at_exit(self)
        self.gb = make_core(rom, boot)
        self.pb.tick(3, False)
        self.gb.tick(3, False)

    def close(self) -> None:
        self.pb.stop(save=False)

    def run(self, case: Case, cpu_fields: bool, core_a_xor: int = 0) -> str | None:
        """Runs one case on both; a description of the first difference, or None.
        ``core_a_xor`` starts the core with a different A (the harness's own test)."""
        pb, gb = self.pb, self.gb
        writes = dict(case.memory)
        for i, v in enumerate(case.code):
            writes[CODE + i] = v
        for addr, v in sorted(writes.items()):
            pb.memory[addr] = v
            gb.write(addr, bytes([v]))
        a, f, b, c, d, e, hl, sp = case.registers
        r = pb.register_file
        r.A, r.F, r.B, r.C, r.D, r.E, r.HL, r.SP, r.PC = a, f, b, c, d, e, hl, sp, CODE
        gb.set_registers(a ^ core_a_xor, f, b, c, d, e, hl, sp, CODE)
        pb.tick(1, False)
        gb.tick(1, False)
        want, got = pyboy_registers(pb), tuple(gb.registers())
        if want != got:
            return f"{case.describe()}: registers PyBoy {want} core {got}"
        for lo, hi in ((0xC000, 0xE000), (0xFF80, 0x10000)):
            w, g = bytes(pb.memory[lo:hi]), gb.read(lo, hi)
            if w != g:
                at = next(i for i in range(hi - lo) if w[i] != g[i])
                return (f"{case.describe()}: memory {lo + at:#06x} PyBoy {w[at]:#04x} "
                        f"core {g[at]:#04x}")
        if cpu_fields:
            wf, gf = _pyboy_cpu_fields(pb), _core_cpu_fields(gb)
            if wf != gf:
                diff = {k: (wf[k], gf[k]) for k in wf if wf[k] != gf[k]}
                return f"{case.describe()}: CPU state (PyBoy, core) {diff}"
        return None


def cases(per_opcode: int, seed: int) -> Iterator[tuple[Case, bool]]:
    """``per_opcode`` cases of every opcode; the first of each is also checked for the CPU
    fields and the cycle counter."""
    rng = random.Random(seed)
    for op in OPCODES:
        for k in range(per_opcode):
            yield make_case(op, rng), k == 0


def run_l1(per_opcode: int, seed: int = 0, cpu_fields_every: bool = False) -> tuple[int, list[str]]:
    """Runs the L1 cases; returns (cases run, failures)."""
    pair = Pair()
    failures: list[str] = []
    n = 0
    try:
        for case, first in cases(per_opcode, seed):
            bad = pair.run(case, first or cpu_fields_every)
            n += 1
            if bad is not None:
                failures.append(bad)
                # The pair has diverged; go on from a fresh one.
                pair.close()
                pair = Pair()
    finally:
        pair.close()
    return n, failures
