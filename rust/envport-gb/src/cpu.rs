//! The SM83 CPU: fetch, decode and execute, interrupts, HALT and EI as PyBoy 2.8.1 runs them.
//! Cycle counts are PyBoy's, and each bus access happens at the cycle within the instruction
//! where PyBoy performs it (that is what timing-sensitive reads of LY/STAT/DIV observe).

use crate::gb::{GameBoy, Stall};

pub const FLAG_Z: u8 = 0x80;
pub const FLAG_N: u8 = 0x40;
pub const FLAG_H: u8 = 0x20;
pub const FLAG_C: u8 = 0x10;

/// Instruction lengths in bytes (0 for the opcodes that are no instruction; 0xCB is 1 here,
/// its second byte is fetched as the CB opcode).
pub const OPCODE_LENGTHS: [u8; 256] = {
    let mut t = [1u8; 256];
    let twos = [
        0x06, 0x0E, 0x10, 0x16, 0x18, 0x1E, 0x20, 0x26, 0x28, 0x2E, 0x30, 0x36, 0x38, 0x3E, 0xC6,
        0xCE, 0xD6, 0xDE, 0xE0, 0xE6, 0xE8, 0xEE, 0xF0, 0xF6, 0xF8, 0xFE,
    ];
    let threes = [
        0x01, 0x08, 0x11, 0x21, 0x31, 0xC2, 0xC3, 0xC4, 0xCA, 0xCC, 0xCD, 0xD2, 0xD4, 0xDA, 0xDC,
        0xEA, 0xFA,
    ];
    let zeros = [
        0xD3, 0xDB, 0xDD, 0xE3, 0xE4, 0xEB, 0xEC, 0xED, 0xF4, 0xFC, 0xFD,
    ];
    let mut i = 0;
    while i < twos.len() {
        t[twos[i]] = 2;
        i += 1;
    }
    i = 0;
    while i < threes.len() {
        t[threes[i]] = 3;
        i += 1;
    }
    i = 0;
    while i < zeros.len() {
        t[zeros[i]] = 0;
        i += 1;
    }
    t
};

pub const UNUSED_OPCODES: [u8; 11] = [
    0xD3, 0xDB, 0xDD, 0xE3, 0xE4, 0xEB, 0xEC, 0xED, 0xF4, 0xFC, 0xFD,
];

/// Where the CPU fetches ROM bytes from: flat offsets of the two bank windows into the ROM,
/// valid while the boot ROM is unmapped (`rom`).
#[derive(Clone, Copy, Default)]
pub struct FetchWindow {
    pub rom: bool,
    pub low: isize,
    pub high: isize,
    /// Flat ROM offset added to PC in each 16 KiB page (ROM bank 0, the switchable bank; the
    /// pages above 0x8000 are never fetched from the ROM).
    offset: [usize; 4],
    /// PC & 0x3FFF below this is fetched without checks (0: never, for that page).
    limit: [u16; 4],
}

/// The bytes of a 16 KiB ROM page fetched without checks (see `refresh_fetch`): an instruction
/// of up to 3 bytes starting below it lies within the page.
const FAST_SPAN: u32 = 0x3FFE;

/// The CPU state the batch loop keeps in registers (see `cpu_tick`): the SM83 registers, PC
/// and the cycle count.
struct Hot {
    pc: u16,
    /// Cycles left to `stop` (the batch's end, or the point where the batch loop looks at EI
    /// delay and bail): handlers count it down, and the loop's test is its sign, so the cycle
    /// count itself (`stop - rem`) needs no register of its own in the hot loop.
    rem: i64,
    a: u8,
    f: u8,
    b: u8,
    c: u8,
    d: u8,
    e: u8,
    hl: u16,
    sp: u16,
    /// The ROM page PC was in when the batch started, for a fetch with one comparison: PC in
    /// [fast_lo, fast_lo + FAST_SPAN) reads at fast_base + PC (the page's flat offset added);
    /// fast_lo is out of PC's range when that page has no fast path. The span is a constant (a
    /// register fewer in the loop). The fetch window changes only with a bail, which ends the
    /// batch.
    fast_lo: u32,
    fast_base: *const u8,
    /// See `cpu_tick` and `rem`: read on the rare paths only.
    stop: i64,
}

impl Hot {
    /// The CPU's cycle count.
    #[inline(always)]
    fn now(&self) -> u64 {
        (self.stop - self.rem) as u64
    }
    #[inline(always)]
    fn add(&mut self, cycles: u64) {
        self.rem -= cycles as i64;
    }
    /// Moves `stop` to `at` (the cycle count unchanged).
    #[inline(always)]
    fn set_stop(&mut self, at: i64) {
        self.rem = at - (self.stop - self.rem);
        self.stop = at;
    }
    /// The loop looks at EI delay and bail after this instruction.
    #[inline(always)]
    fn check_after(&mut self) {
        self.stop -= self.rem;
        self.rem = 0;
    }
    #[inline(always)]
    fn bc(&self) -> u16 {
        ((self.b as u16) << 8) | self.c as u16
    }
    #[inline(always)]
    fn de(&self) -> u16 {
        ((self.d as u16) << 8) | self.e as u16
    }
    #[inline(always)]
    fn set_bc(&mut self, v: u16) {
        self.b = (v >> 8) as u8;
        self.c = v as u8;
    }
    #[inline(always)]
    fn set_de(&mut self, v: u16) {
        self.d = (v >> 8) as u8;
        self.e = v as u8;
    }

    /// Register `r` of the usual 3-bit encoding (B C D E H L - A); 6, (HL), is not handled here.
    #[inline(always)]
    fn reg(&self, r: u8) -> u8 {
        match r {
            0 => self.b,
            1 => self.c,
            2 => self.d,
            3 => self.e,
            4 => (self.hl >> 8) as u8,
            5 => self.hl as u8,
            _ => self.a,
        }
    }

    #[inline(always)]
    fn set_reg(&mut self, r: u8, v: u8) {
        match r {
            0 => self.b = v,
            1 => self.c = v,
            2 => self.d = v,
            3 => self.e = v,
            4 => self.hl = (self.hl & 0x00FF) | ((v as u16) << 8),
            5 => self.hl = (self.hl & 0xFF00) | v as u16,
            _ => self.a = v,
        }
    }

    #[inline(always)]
    fn flag(&self, mask: u8) -> bool {
        self.f & mask != 0
    }

    /// The 8 ALU operations on A (ADD ADC SUB SBC AND XOR OR CP), flags as PyBoy computes them.
    #[inline(always)]
    fn alu(&mut self, op: u8, b: u8) {
        let a = self.a as i32;
        let bi = b as i32;
        let carry = self.flag(FLAG_C) as i32;
        let (t, flags): (i32, u8) = match op {
            0 => {
                let t = a + bi;
                let h = (a & 0xF) + (bi & 0xF) > 0xF;
                (t, (h as u8) << 5 | ((t > 0xFF) as u8) << 4)
            }
            1 => {
                let t = a + bi + carry;
                let h = (a & 0xF) + (bi & 0xF) + carry > 0xF;
                (t, (h as u8) << 5 | ((t > 0xFF) as u8) << 4)
            }
            2 | 7 => {
                let t = a - bi;
                let h = (a & 0xF) - (bi & 0xF) < 0;
                (t, FLAG_N | (h as u8) << 5 | ((t < 0) as u8) << 4)
            }
            3 => {
                let t = a - bi - carry;
                let h = (a & 0xF) - (bi & 0xF) - carry < 0;
                (t, FLAG_N | (h as u8) << 5 | ((t < 0) as u8) << 4)
            }
            4 => (a & bi, FLAG_H),
            5 => (a ^ bi, 0),
            _ => (a | bi, 0),
        };
        let z = ((t & 0xFF) == 0) as u8;
        self.f = flags | z << 7;
        if op != 7 {
            self.a = t as u8;
        }
    }

    #[inline(always)]
    fn inc8(&mut self, a: u8) -> u8 {
        let t = a.wrapping_add(1);
        let h = (a & 0xF) + 1 > 0xF;
        self.f = (self.f & FLAG_C) | ((t == 0) as u8) << 7 | (h as u8) << 5;
        t
    }

    #[inline(always)]
    fn dec8(&mut self, a: u8) -> u8 {
        let t = a.wrapping_sub(1);
        let h = (a & 0xF) == 0;
        self.f = (self.f & FLAG_C) | FLAG_N | ((t == 0) as u8) << 7 | (h as u8) << 5;
        t
    }

    #[inline(always)]
    fn add_hl(&mut self, b: u16) {
        let a = self.hl as u32;
        let b = b as u32;
        let t = a + b;
        let h = (a & 0xFFF) + (b & 0xFFF) > 0xFFF;
        self.f = (self.f & FLAG_Z) | (h as u8) << 5 | ((t > 0xFFFF) as u8) << 4;
        self.hl = t as u16;
    }

    /// SP + signed immediate, with H and C from the low byte (ADD SP,r8 and LD HL,SP+r8).
    #[inline(always)]
    fn sp_plus(&mut self, v: u8) -> u16 {
        let sp = self.sp;
        let h = (sp & 0xF) + (v as u16 & 0xF) > 0xF;
        let c = (sp & 0xFF) + v as u16 > 0xFF;
        self.f = (h as u8) << 5 | (c as u8) << 4;
        sp.wrapping_add(v as i8 as i16 as u16)
    }

    /// The CB-prefixed rotate/shift/swap group (op 0-7), on value `a`.
    #[inline(always)]
    fn cb_shift(&mut self, op: u8, a: u8) -> u8 {
        let a16 = a as u16;
        let c = self.flag(FLAG_C) as u16;
        let (t, carry): (u16, bool) = match op {
            0 => ((a16 << 1) | (a16 >> 7), a & 0x80 != 0),
            1 => ((a16 >> 1) | ((a16 & 1) << 7), a & 1 != 0),
            2 => ((a16 << 1) | c, a & 0x80 != 0),
            3 => ((a16 >> 1) | (c << 7), a & 1 != 0),
            4 => (a16 << 1, a & 0x80 != 0),
            5 => ((a16 >> 1) | (a16 & 0x80), a & 1 != 0),
            6 => (((a16 & 0xF0) >> 4) | ((a16 & 0x0F) << 4), false),
            _ => (a16 >> 1, a & 1 != 0),
        };
        let t = t as u8;
        self.f = ((t == 0) as u8) << 7 | (carry as u8) << 4;
        t
    }

    #[inline(always)]
    fn condition(&self, op: u8) -> bool {
        match (op >> 3) & 3 {
            0 => !self.flag(FLAG_Z),
            1 => self.flag(FLAG_Z),
            2 => !self.flag(FLAG_C),
            _ => self.flag(FLAG_C),
        }
    }
}

impl GameBoy {
    #[cfg(test)]
    pub(crate) fn set_bc_for_test(&mut self, v: u16) {
        self.b = (v >> 8) as u8;
        self.c = v as u8;
    }

    /// A bus read at CPU time `r.cycles`: the inline RAM paths need no clock, the others (which
    /// bring the PPU, timer or DMA up to date) see it in `self.cycles`.
    #[inline(always)]
    fn read_c(&mut self, r: &Hot, addr: u16) -> u8 {
        if (0xC000..0xE000).contains(&addr) {
            return self.wram[(addr - 0xC000) as usize];
        }
        if (0xFF80..0xFFFF).contains(&addr) && !self.dma_active {
            return self.hram[(addr - 0xFF80) as usize];
        }
        // The slow paths see the clock, and HL (an OAM read during DMA compares it).
        (self.cycles, self.hl) = (r.now(), r.hl);
        self.read_slow(addr)
    }

    /// A bus write at CPU time `cycles` (see `read_c`).
    #[inline(always)]
    fn write_c(&mut self, r: &mut Hot, addr: u16, value: u8) {
        if (0xC000..0xE000).contains(&addr) {
            self.wram[(addr - 0xC000) as usize] = value;
            return;
        }
        if (0xFF80..0xFFFF).contains(&addr) && !self.dma_active {
            self.hram[(addr - 0xFF80) as usize] = value;
            return;
        }
        (self.cycles, self.hl) = (r.now(), r.hl);
        self.write_slow(addr, value);
        if self.bail {
            r.check_after(); // only the slow paths bail
        }
    }

    #[inline(always)]
    fn push16(&mut self, r: &mut Hot, v: u16) {
        // Cycles before each byte are added by the callers (they differ by instruction).
        let (addr, value) = (r.sp.wrapping_sub(1), (v >> 8) as u8);
        self.write_c(r, addr, value);
        r.add(4);
        let (addr, value) = (r.sp.wrapping_sub(2), v as u8);
        self.write_c(r, addr, value);
        r.sp = r.sp.wrapping_sub(2);
    }

    #[inline(always)]
    fn pop16(&mut self, r: &mut Hot) -> u16 {
        let lo = self.read_c(r, r.sp) as u16;
        r.add(4);
        let hi = self.read_c(r, r.sp.wrapping_add(1)) as u16;
        r.sp = r.sp.wrapping_add(2);
        (hi << 8) | lo
    }

    #[inline(always)]
    fn pending(&self) -> u8 {
        self.if_reg & self.ie_reg & 0x1F
    }

    // ----------------------------------------------------------------------------------------
    // Interrupts and the batch loop

    fn check_interrupts(&mut self) -> bool {
        if self.interrupt_queued || self.ei_delay != 0 {
            return false;
        }
        if self.pending() != 0 {
            if self.halted && !self.halted_during_ei {
                self.pc = self.pc.wrapping_add(1); // leave the HALT
            }
            self.halted_during_ei = false;
            if self.ime {
                self.dispatch_interrupt();
            }
            self.interrupt_queued = true;
            true
        } else {
            self.interrupt_queued = false;
            false
        }
    }

    fn dispatch_interrupt(&mut self) {
        // The high byte of PC is pushed before the vector is chosen: that write can hit IE.
        self.write(self.sp.wrapping_sub(1), (self.pc >> 8) as u8);
        let pending = self.pending();
        if pending == 0 {
            // Dispatch cancelled by the write: PyBoy continues at 0x0000.
            self.pc = 0;
            self.ime = false;
            return;
        }
        let bit = pending.trailing_zeros() as u8;
        self.if_reg ^= 1 << bit;
        self.write(self.sp.wrapping_sub(2), self.pc as u8);
        self.sp = self.sp.wrapping_sub(2);
        self.pc = 0x40 + 8 * bit as u16;
        self.cycles += 20;
        self.ime = false;
    }

    /// Runs the CPU for (at least) `budget` cycles, stopping early after a write that may
    /// change the schedule (PyBoy's `bail`). When a batch ends on its budget with nothing for
    /// the next batch's start to do (no bail, no pending interrupt, no HALT or EI delay), the
    /// peripherals are caught up here (`end_batch`) and the next batch runs at once, the CPU
    /// state staying in registers: the same steps in the same order as `run_frame`'s loop.
    /// Returns true when the last batch's catch-up was done here.
    pub(crate) fn cpu_tick(&mut self, budget: i64) -> bool {
        let mut target = self.cycles as i64 + budget;
        if self.check_interrupts() {
            self.halted = false;
        }
        if self.halted && self.interrupt_queued {
            self.halted = false;
            self.pc = self.pc.wrapping_add(1);
        } else if self.halted {
            self.cycles = (self.cycles as i64 + budget) as u64;
        }
        self.interrupt_queued = false;
        self.bail = false;
        if (self.cycles as i64) >= target {
            return false;
        }
        // One comparison per instruction: `stop` is the batch's end, or i64::MIN when the last
        // instruction may have bailed or an EI delay is running; then the rare cases are
        // handled in the order PyBoy handles them (EI delay, bail, end of the batch).
        let mut r = self.load_hot();
        if self.ei_delay == 0 {
            r.set_stop(target);
        }
        // PC and the cycle count live in registers during the batch (no store-to-load round
        // trip through memory on every instruction): nothing on the bus reads PC, and the
        // cycle count is stored for the bus only on its slow paths (`read_c`, `write_c`).
        let caught_up;
        loop {
            self.fetch_execute(&mut r);
            if r.rem <= 0 {
                r.set_stop(target);
                self.after_ei();
                if self.bail {
                    caught_up = false;
                    break; // bail is also set when the CPU stalls
                }
                if r.rem <= 0 {
                    target = self.end_batch(r.now());
                    if target == i64::MIN {
                        caught_up = true;
                        break;
                    }
                    r.set_stop(target);
                    continue;
                }
                if self.ei_delay != 0 {
                    r.check_after();
                }
            }
        }
        self.store_hot(&r);
        caught_up
    }

    /// The end of a batch that ran to its budget: the peripherals' catch-up, then, when the next
    /// batch's start has nothing to do (see `cpu_tick`), its end; otherwise i64::MIN (the frame
    /// loop takes over: the frame ended, or an interrupt, HALT or EI delay is due).
    /// Takes the cycle count alone, by value: a reference to the hot state would keep it in
    /// memory through the loop. The catch-up reads no CPU register but the clock.
    #[inline(never)]
    fn end_batch(&mut self, cycles: u64) -> i64 {
        self.cycles = cycles;
        self.catch_up();
        if self.lcd.frame_done
            || self.interrupt_queued
            || self.ei_delay != 0
            || self.halted
            || self.pending() != 0
        {
            return i64::MIN;
        }
        // cpu_tick's start for this case: check_interrupts finds nothing, bail is clear.
        self.cycles as i64 + self.budget()
    }

    #[inline(always)]
    fn load_hot(&self) -> Hot {
        let page = (self.pc >> 14) as usize;
        let (fast_lo, fast_base) = if self.fetch.limit[page] != 0 {
            debug_assert_eq!(self.fetch.limit[page], FAST_SPAN as u16);
            let base = self.cart.rom.as_ptr().wrapping_add(self.fetch.offset[page]);
            ((page as u32) << 14, base)
        } else {
            (0x20000, self.cart.rom.as_ptr())
        };
        Hot {
            pc: self.pc,
            a: self.a,
            f: self.f,
            b: self.b,
            c: self.c,
            d: self.d,
            e: self.e,
            hl: self.hl,
            sp: self.sp,
            fast_lo,
            fast_base,
            rem: 0,
            stop: self.cycles as i64,
        }
    }

    #[inline(always)]
    fn store_hot(&mut self, r: &Hot) {
        (self.pc, self.cycles) = (r.pc, r.now());
        (self.a, self.f, self.b, self.c) = (r.a, r.f, r.b, r.c);
        (self.d, self.e, self.hl, self.sp) = (r.d, r.e, r.hl, r.sp);
    }

    /// Recomputes where ROM bytes are fetched from: after a bank switch or the boot ROM's
    /// unmapping (the bus calls it), or a state change from outside.
    pub(crate) fn refresh_fetch(&mut self) {
        let rom = !self.bootrom_enabled;
        let low = self.cart.rombank_selected_low as isize * 0x4000;
        let high = (self.cart.rombank_selected as isize - 1) * 0x4000;
        let len = self.cart.rom.len() as isize;
        // A bank is fetched from without checks only when all of it lies within the ROM;
        // otherwise (and for the 2 bytes below 0x4000 and 0x8000) the general path runs.
        let fits = |flat_start: isize| rom && flat_start >= 0 && flat_start + 0x4000 <= len;
        self.fetch = FetchWindow {
            rom,
            low,
            high,
            offset: [low as usize, high as usize, 0, 0],
            limit: [
                if fits(low) { FAST_SPAN as u16 } else { 0 },
                if fits(high + 0x4000) {
                    FAST_SPAN as u16
                } else {
                    0
                },
                0,
                0,
            ],
        };
    }

    /// Fetches and executes one instruction.
    pub fn step(&mut self) {
        self.refresh_fetch();
        let mut r = self.load_hot();
        self.fetch_execute(&mut r);
        self.store_hot(&r);
        self.after_ei();
    }

    /// The EI delay: IME is set after the instruction that follows EI.
    #[inline(always)]
    fn after_ei(&mut self) {
        if self.ei_delay != 0 {
            self.ei_delay -= 1;
            if self.ei_delay == 0 {
                self.ime = true;
                self.bail = self.pending() != 0;
            }
        }
    }

    #[inline(always)]
    fn fetch_execute(&mut self, r: &mut Hot) {
        let pc = r.pc;
        let page = (pc >> 14) as usize;
        let (op, v16) = if (pc as u32).wrapping_sub(r.fast_lo) < FAST_SPAN {
            // SAFETY: as below, for the page `load_hot` chose (same offset and limit).
            unsafe {
                let p = r.fast_base.wrapping_add(pc as usize);
                (
                    *p,
                    u16::from_le(std::ptr::read_unaligned(p.add(1) as *const u16)),
                )
            }
        } else if (pc & 0x3FFF) < self.fetch.limit[page] {
            let at = self.fetch.offset[page].wrapping_add(pc as usize);
            // SAFETY: `refresh_fetch` sets a non-zero limit only for a ROM page whose bank lies
            // wholly within the ROM, and pc & 0x3FFF < 0x3FFE keeps the 3 bytes in that bank.
            unsafe {
                let p = self.cart.rom.as_ptr().add(at);
                (
                    *p,
                    u16::from_le(std::ptr::read_unaligned(p.add(1) as *const u16)),
                )
            }
        } else {
            self.cycles = r.now();
            let (op, b1, b2) = self.fetch_slow(pc);
            (op, ((b2 as u16) << 8) | b1 as u16)
        };
        self.execute(r, op, v16);
    }

    /// Fetch outside the checked ROM fast path: the boot ROM, RAM, I/O, the 2 bytes below a
    /// bank end, banks that reach past the ROM's end.
    #[inline(never)]
    #[cold]
    fn fetch_slow(&mut self, pc: u16) -> (u8, u8, u8) {
        let window = self.fetch;
        if window.rom && (pc as u32 + 2) < 0x8000 {
            // Operands straight from the ROM banks; bank 0 reads use the low bank, and an
            // instruction straddling 0x4000 reads its tail through the switchable bank's
            // flat offset (PyBoy indexes its bank array without bounds checks).
            let start = if (pc as u32 + 2) < 0x4000 {
                window.low
            } else {
                window.high
            } + pc as isize;
            let rom = &self.cart.rom;
            match rom.get(start as usize..start as usize + 3) {
                Some(w) if start >= 0 => (w[0], w[1], w[2]),
                _ => {
                    let len = rom.len() as isize;
                    let at = |o: isize| rom[(start + o).rem_euclid(len) as usize];
                    (at(0), at(1), at(2))
                }
            }
        } else {
            self.mao = 0;
            let op = self.read(pc);
            let len = OPCODE_LENGTHS[op as usize];
            let b1 = if op == 0xCB || len >= 2 {
                self.mao = 4;
                self.read(pc.wrapping_add(1))
            } else {
                0
            };
            let b2 = if len == 3 {
                self.mao = 8;
                self.read(pc.wrapping_add(2))
            } else {
                0
            };
            self.mao = 0;
            (op, b1, b2)
        }
    }

    #[inline(always)]
    fn next(&mut self, r: &mut Hot, len: u16, cycles: u64) {
        r.pc = r.pc.wrapping_add(len);
        r.add(cycles);
    }

    /// Dispatch on the opcode to the specialised handlers (CB's second byte is `b1`).
    #[inline(always)]
    fn execute(&mut self, r: &mut Hot, op: u8, v16: u16) {
        let b1 = v16 as u8;
        match op {
            0x00 => self.exec::<0x00>(r, b1, v16),
            0x01 => self.exec::<0x01>(r, b1, v16),
            0x02 => self.exec::<0x02>(r, b1, v16),
            0x03 => self.exec::<0x03>(r, b1, v16),
            0x04 => self.exec::<0x04>(r, b1, v16),
            0x05 => self.exec::<0x05>(r, b1, v16),
            0x06 => self.exec::<0x06>(r, b1, v16),
            0x07 => self.exec::<0x07>(r, b1, v16),
            0x08 => self.exec::<0x08>(r, b1, v16),
            0x09 => self.exec::<0x09>(r, b1, v16),
            0x0A => self.exec::<0x0A>(r, b1, v16),
            0x0B => self.exec::<0x0B>(r, b1, v16),
            0x0C => self.exec::<0x0C>(r, b1, v16),
            0x0D => self.exec::<0x0D>(r, b1, v16),
            0x0E => self.exec::<0x0E>(r, b1, v16),
            0x0F => self.exec::<0x0F>(r, b1, v16),
            0x10 => self.exec::<0x10>(r, b1, v16),
            0x11 => self.exec::<0x11>(r, b1, v16),
            0x12 => self.exec::<0x12>(r, b1, v16),
            0x13 => self.exec::<0x13>(r, b1, v16),
            0x14 => self.exec::<0x14>(r, b1, v16),
            0x15 => self.exec::<0x15>(r, b1, v16),
            0x16 => self.exec::<0x16>(r, b1, v16),
            0x17 => self.exec::<0x17>(r, b1, v16),
            0x18 => self.exec::<0x18>(r, b1, v16),
            0x19 => self.exec::<0x19>(r, b1, v16),
            0x1A => self.exec::<0x1A>(r, b1, v16),
            0x1B => self.exec::<0x1B>(r, b1, v16),
            0x1C => self.exec::<0x1C>(r, b1, v16),
            0x1D => self.exec::<0x1D>(r, b1, v16),
            0x1E => self.exec::<0x1E>(r, b1, v16),
            0x1F => self.exec::<0x1F>(r, b1, v16),
            0x20 => self.exec::<0x20>(r, b1, v16),
            0x21 => self.exec::<0x21>(r, b1, v16),
            0x22 => self.exec::<0x22>(r, b1, v16),
            0x23 => self.exec::<0x23>(r, b1, v16),
            0x24 => self.exec::<0x24>(r, b1, v16),
            0x25 => self.exec::<0x25>(r, b1, v16),
            0x26 => self.exec::<0x26>(r, b1, v16),
            0x27 => self.exec::<0x27>(r, b1, v16),
            0x28 => self.exec::<0x28>(r, b1, v16),
            0x29 => self.exec::<0x29>(r, b1, v16),
            0x2A => self.exec::<0x2A>(r, b1, v16),
            0x2B => self.exec::<0x2B>(r, b1, v16),
            0x2C => self.exec::<0x2C>(r, b1, v16),
            0x2D => self.exec::<0x2D>(r, b1, v16),
            0x2E => self.exec::<0x2E>(r, b1, v16),
            0x2F => self.exec::<0x2F>(r, b1, v16),
            0x30 => self.exec::<0x30>(r, b1, v16),
            0x31 => self.exec::<0x31>(r, b1, v16),
            0x32 => self.exec::<0x32>(r, b1, v16),
            0x33 => self.exec::<0x33>(r, b1, v16),
            0x34 => self.exec::<0x34>(r, b1, v16),
            0x35 => self.exec::<0x35>(r, b1, v16),
            0x36 => self.exec::<0x36>(r, b1, v16),
            0x37 => self.exec::<0x37>(r, b1, v16),
            0x38 => self.exec::<0x38>(r, b1, v16),
            0x39 => self.exec::<0x39>(r, b1, v16),
            0x3A => self.exec::<0x3A>(r, b1, v16),
            0x3B => self.exec::<0x3B>(r, b1, v16),
            0x3C => self.exec::<0x3C>(r, b1, v16),
            0x3D => self.exec::<0x3D>(r, b1, v16),
            0x3E => self.exec::<0x3E>(r, b1, v16),
            0x3F => self.exec::<0x3F>(r, b1, v16),
            0x40 => self.exec::<0x40>(r, b1, v16),
            0x41 => self.exec::<0x41>(r, b1, v16),
            0x42 => self.exec::<0x42>(r, b1, v16),
            0x43 => self.exec::<0x43>(r, b1, v16),
            0x44 => self.exec::<0x44>(r, b1, v16),
            0x45 => self.exec::<0x45>(r, b1, v16),
            0x46 => self.exec::<0x46>(r, b1, v16),
            0x47 => self.exec::<0x47>(r, b1, v16),
            0x48 => self.exec::<0x48>(r, b1, v16),
            0x49 => self.exec::<0x49>(r, b1, v16),
            0x4A => self.exec::<0x4A>(r, b1, v16),
            0x4B => self.exec::<0x4B>(r, b1, v16),
            0x4C => self.exec::<0x4C>(r, b1, v16),
            0x4D => self.exec::<0x4D>(r, b1, v16),
            0x4E => self.exec::<0x4E>(r, b1, v16),
            0x4F => self.exec::<0x4F>(r, b1, v16),
            0x50 => self.exec::<0x50>(r, b1, v16),
            0x51 => self.exec::<0x51>(r, b1, v16),
            0x52 => self.exec::<0x52>(r, b1, v16),
            0x53 => self.exec::<0x53>(r, b1, v16),
            0x54 => self.exec::<0x54>(r, b1, v16),
            0x55 => self.exec::<0x55>(r, b1, v16),
            0x56 => self.exec::<0x56>(r, b1, v16),
            0x57 => self.exec::<0x57>(r, b1, v16),
            0x58 => self.exec::<0x58>(r, b1, v16),
            0x59 => self.exec::<0x59>(r, b1, v16),
            0x5A => self.exec::<0x5A>(r, b1, v16),
            0x5B => self.exec::<0x5B>(r, b1, v16),
            0x5C => self.exec::<0x5C>(r, b1, v16),
            0x5D => self.exec::<0x5D>(r, b1, v16),
            0x5E => self.exec::<0x5E>(r, b1, v16),
            0x5F => self.exec::<0x5F>(r, b1, v16),
            0x60 => self.exec::<0x60>(r, b1, v16),
            0x61 => self.exec::<0x61>(r, b1, v16),
            0x62 => self.exec::<0x62>(r, b1, v16),
            0x63 => self.exec::<0x63>(r, b1, v16),
            0x64 => self.exec::<0x64>(r, b1, v16),
            0x65 => self.exec::<0x65>(r, b1, v16),
            0x66 => self.exec::<0x66>(r, b1, v16),
            0x67 => self.exec::<0x67>(r, b1, v16),
            0x68 => self.exec::<0x68>(r, b1, v16),
            0x69 => self.exec::<0x69>(r, b1, v16),
            0x6A => self.exec::<0x6A>(r, b1, v16),
            0x6B => self.exec::<0x6B>(r, b1, v16),
            0x6C => self.exec::<0x6C>(r, b1, v16),
            0x6D => self.exec::<0x6D>(r, b1, v16),
            0x6E => self.exec::<0x6E>(r, b1, v16),
            0x6F => self.exec::<0x6F>(r, b1, v16),
            0x70 => self.exec::<0x70>(r, b1, v16),
            0x71 => self.exec::<0x71>(r, b1, v16),
            0x72 => self.exec::<0x72>(r, b1, v16),
            0x73 => self.exec::<0x73>(r, b1, v16),
            0x74 => self.exec::<0x74>(r, b1, v16),
            0x75 => self.exec::<0x75>(r, b1, v16),
            0x76 => self.exec::<0x76>(r, b1, v16),
            0x77 => self.exec::<0x77>(r, b1, v16),
            0x78 => self.exec::<0x78>(r, b1, v16),
            0x79 => self.exec::<0x79>(r, b1, v16),
            0x7A => self.exec::<0x7A>(r, b1, v16),
            0x7B => self.exec::<0x7B>(r, b1, v16),
            0x7C => self.exec::<0x7C>(r, b1, v16),
            0x7D => self.exec::<0x7D>(r, b1, v16),
            0x7E => self.exec::<0x7E>(r, b1, v16),
            0x7F => self.exec::<0x7F>(r, b1, v16),
            0x80 => self.exec::<0x80>(r, b1, v16),
            0x81 => self.exec::<0x81>(r, b1, v16),
            0x82 => self.exec::<0x82>(r, b1, v16),
            0x83 => self.exec::<0x83>(r, b1, v16),
            0x84 => self.exec::<0x84>(r, b1, v16),
            0x85 => self.exec::<0x85>(r, b1, v16),
            0x86 => self.exec::<0x86>(r, b1, v16),
            0x87 => self.exec::<0x87>(r, b1, v16),
            0x88 => self.exec::<0x88>(r, b1, v16),
            0x89 => self.exec::<0x89>(r, b1, v16),
            0x8A => self.exec::<0x8A>(r, b1, v16),
            0x8B => self.exec::<0x8B>(r, b1, v16),
            0x8C => self.exec::<0x8C>(r, b1, v16),
            0x8D => self.exec::<0x8D>(r, b1, v16),
            0x8E => self.exec::<0x8E>(r, b1, v16),
            0x8F => self.exec::<0x8F>(r, b1, v16),
            0x90 => self.exec::<0x90>(r, b1, v16),
            0x91 => self.exec::<0x91>(r, b1, v16),
            0x92 => self.exec::<0x92>(r, b1, v16),
            0x93 => self.exec::<0x93>(r, b1, v16),
            0x94 => self.exec::<0x94>(r, b1, v16),
            0x95 => self.exec::<0x95>(r, b1, v16),
            0x96 => self.exec::<0x96>(r, b1, v16),
            0x97 => self.exec::<0x97>(r, b1, v16),
            0x98 => self.exec::<0x98>(r, b1, v16),
            0x99 => self.exec::<0x99>(r, b1, v16),
            0x9A => self.exec::<0x9A>(r, b1, v16),
            0x9B => self.exec::<0x9B>(r, b1, v16),
            0x9C => self.exec::<0x9C>(r, b1, v16),
            0x9D => self.exec::<0x9D>(r, b1, v16),
            0x9E => self.exec::<0x9E>(r, b1, v16),
            0x9F => self.exec::<0x9F>(r, b1, v16),
            0xA0 => self.exec::<0xA0>(r, b1, v16),
            0xA1 => self.exec::<0xA1>(r, b1, v16),
            0xA2 => self.exec::<0xA2>(r, b1, v16),
            0xA3 => self.exec::<0xA3>(r, b1, v16),
            0xA4 => self.exec::<0xA4>(r, b1, v16),
            0xA5 => self.exec::<0xA5>(r, b1, v16),
            0xA6 => self.exec::<0xA6>(r, b1, v16),
            0xA7 => self.exec::<0xA7>(r, b1, v16),
            0xA8 => self.exec::<0xA8>(r, b1, v16),
            0xA9 => self.exec::<0xA9>(r, b1, v16),
            0xAA => self.exec::<0xAA>(r, b1, v16),
            0xAB => self.exec::<0xAB>(r, b1, v16),
            0xAC => self.exec::<0xAC>(r, b1, v16),
            0xAD => self.exec::<0xAD>(r, b1, v16),
            0xAE => self.exec::<0xAE>(r, b1, v16),
            0xAF => self.exec::<0xAF>(r, b1, v16),
            0xB0 => self.exec::<0xB0>(r, b1, v16),
            0xB1 => self.exec::<0xB1>(r, b1, v16),
            0xB2 => self.exec::<0xB2>(r, b1, v16),
            0xB3 => self.exec::<0xB3>(r, b1, v16),
            0xB4 => self.exec::<0xB4>(r, b1, v16),
            0xB5 => self.exec::<0xB5>(r, b1, v16),
            0xB6 => self.exec::<0xB6>(r, b1, v16),
            0xB7 => self.exec::<0xB7>(r, b1, v16),
            0xB8 => self.exec::<0xB8>(r, b1, v16),
            0xB9 => self.exec::<0xB9>(r, b1, v16),
            0xBA => self.exec::<0xBA>(r, b1, v16),
            0xBB => self.exec::<0xBB>(r, b1, v16),
            0xBC => self.exec::<0xBC>(r, b1, v16),
            0xBD => self.exec::<0xBD>(r, b1, v16),
            0xBE => self.exec::<0xBE>(r, b1, v16),
            0xBF => self.exec::<0xBF>(r, b1, v16),
            0xC0 => self.exec::<0xC0>(r, b1, v16),
            0xC1 => self.exec::<0xC1>(r, b1, v16),
            0xC2 => self.exec::<0xC2>(r, b1, v16),
            0xC3 => self.exec::<0xC3>(r, b1, v16),
            0xC4 => self.exec::<0xC4>(r, b1, v16),
            0xC5 => self.exec::<0xC5>(r, b1, v16),
            0xC6 => self.exec::<0xC6>(r, b1, v16),
            0xC7 => self.exec::<0xC7>(r, b1, v16),
            0xC8 => self.exec::<0xC8>(r, b1, v16),
            0xC9 => self.exec::<0xC9>(r, b1, v16),
            0xCA => self.exec::<0xCA>(r, b1, v16),
            0xCB => self.execute_cb(r, b1),
            0xCC => self.exec::<0xCC>(r, b1, v16),
            0xCD => self.exec::<0xCD>(r, b1, v16),
            0xCE => self.exec::<0xCE>(r, b1, v16),
            0xCF => self.exec::<0xCF>(r, b1, v16),
            0xD0 => self.exec::<0xD0>(r, b1, v16),
            0xD1 => self.exec::<0xD1>(r, b1, v16),
            0xD2 => self.exec::<0xD2>(r, b1, v16),
            0xD3 => self.exec::<0xD3>(r, b1, v16),
            0xD4 => self.exec::<0xD4>(r, b1, v16),
            0xD5 => self.exec::<0xD5>(r, b1, v16),
            0xD6 => self.exec::<0xD6>(r, b1, v16),
            0xD7 => self.exec::<0xD7>(r, b1, v16),
            0xD8 => self.exec::<0xD8>(r, b1, v16),
            0xD9 => self.exec::<0xD9>(r, b1, v16),
            0xDA => self.exec::<0xDA>(r, b1, v16),
            0xDB => self.exec::<0xDB>(r, b1, v16),
            0xDC => self.exec::<0xDC>(r, b1, v16),
            0xDD => self.exec::<0xDD>(r, b1, v16),
            0xDE => self.exec::<0xDE>(r, b1, v16),
            0xDF => self.exec::<0xDF>(r, b1, v16),
            0xE0 => self.exec::<0xE0>(r, b1, v16),
            0xE1 => self.exec::<0xE1>(r, b1, v16),
            0xE2 => self.exec::<0xE2>(r, b1, v16),
            0xE3 => self.exec::<0xE3>(r, b1, v16),
            0xE4 => self.exec::<0xE4>(r, b1, v16),
            0xE5 => self.exec::<0xE5>(r, b1, v16),
            0xE6 => self.exec::<0xE6>(r, b1, v16),
            0xE7 => self.exec::<0xE7>(r, b1, v16),
            0xE8 => self.exec::<0xE8>(r, b1, v16),
            0xE9 => self.exec::<0xE9>(r, b1, v16),
            0xEA => self.exec::<0xEA>(r, b1, v16),
            0xEB => self.exec::<0xEB>(r, b1, v16),
            0xEC => self.exec::<0xEC>(r, b1, v16),
            0xED => self.exec::<0xED>(r, b1, v16),
            0xEE => self.exec::<0xEE>(r, b1, v16),
            0xEF => self.exec::<0xEF>(r, b1, v16),
            0xF0 => self.exec::<0xF0>(r, b1, v16),
            0xF1 => self.exec::<0xF1>(r, b1, v16),
            0xF2 => self.exec::<0xF2>(r, b1, v16),
            0xF3 => self.exec::<0xF3>(r, b1, v16),
            0xF4 => self.exec::<0xF4>(r, b1, v16),
            0xF5 => self.exec::<0xF5>(r, b1, v16),
            0xF6 => self.exec::<0xF6>(r, b1, v16),
            0xF7 => self.exec::<0xF7>(r, b1, v16),
            0xF8 => self.exec::<0xF8>(r, b1, v16),
            0xF9 => self.exec::<0xF9>(r, b1, v16),
            0xFA => self.exec::<0xFA>(r, b1, v16),
            0xFB => self.exec::<0xFB>(r, b1, v16),
            0xFC => self.exec::<0xFC>(r, b1, v16),
            0xFD => self.exec::<0xFD>(r, b1, v16),
            0xFE => self.exec::<0xFE>(r, b1, v16),
            0xFF => self.exec::<0xFF>(r, b1, v16),
        }
    }

    /// One opcode's handler: `OP` is a constant, so each instance keeps only its own arm.
    #[inline(always)]
    fn exec<const OP: u8>(&mut self, r: &mut Hot, v8: u8, v16: u16) {
        let op = OP;
        match op {
            0x00 => self.next(r, 1, 4),
            0x01 | 0x11 | 0x21 | 0x31 => {
                match op {
                    0x01 => r.set_bc(v16),
                    0x11 => r.set_de(v16),
                    0x21 => r.hl = v16,
                    _ => r.sp = v16,
                }
                self.next(r, 3, 12);
            }
            0x02 => {
                let (addr, value) = (r.bc(), r.a);
                self.write_c(r, addr, value);
                self.next(r, 1, 8);
            }
            0x12 => {
                self.mao = 4;
                let (addr, value) = (r.de(), r.a);
                self.write_c(r, addr, value);
                self.mao = 0;
                self.next(r, 1, 8);
            }
            0x22 | 0x32 => {
                let (addr, value) = (r.hl, r.a);
                self.write_c(r, addr, value);
                r.hl = if op == 0x22 {
                    r.hl.wrapping_add(1)
                } else {
                    r.hl.wrapping_sub(1)
                };
                self.next(r, 1, 8);
            }
            0x0A => {
                r.a = self.read_c(r, r.bc());
                self.next(r, 1, 8);
            }
            0x1A => {
                self.mao = 4;
                r.a = self.read_c(r, r.de());
                self.mao = 0;
                self.next(r, 1, 8);
            }
            0x2A | 0x3A => {
                r.a = self.read_c(r, r.hl);
                r.hl = if op == 0x2A {
                    r.hl.wrapping_add(1)
                } else {
                    r.hl.wrapping_sub(1)
                };
                self.next(r, 1, 8);
            }
            0x03 | 0x13 | 0x23 | 0x33 | 0x0B | 0x1B | 0x2B | 0x3B => {
                let delta: u16 = if op & 0x08 == 0 { 1 } else { 0xFFFF };
                match op >> 4 {
                    0 => r.set_bc(r.bc().wrapping_add(delta)),
                    1 => r.set_de(r.de().wrapping_add(delta)),
                    2 => r.hl = r.hl.wrapping_add(delta),
                    _ => r.sp = r.sp.wrapping_add(delta),
                }
                self.next(r, 1, 8);
            }
            0x09 | 0x19 | 0x29 | 0x39 => {
                let v = match op >> 4 {
                    0 => r.bc(),
                    1 => r.de(),
                    2 => r.hl,
                    _ => r.sp,
                };
                r.add_hl(v);
                self.next(r, 1, 8);
            }
            0x34 | 0x35 => {
                let a = self.read_c(r, r.hl);
                let t = if op == 0x34 { r.inc8(a) } else { r.dec8(a) };
                r.add(4);
                let (addr, value) = (r.hl, t);
                self.write_c(r, addr, value);
                self.next(r, 1, 8);
            }
            0x36 => {
                r.add(4);
                let (addr, value) = (r.hl, v8);
                self.write_c(r, addr, value);
                self.next(r, 2, 8);
            }
            0x04 | 0x0C | 0x14 | 0x1C | 0x24 | 0x2C | 0x3C => {
                let ri = (op >> 3) & 7;
                let t = r.inc8(r.reg(ri));
                r.set_reg(ri, t);
                self.next(r, 1, 4);
            }
            0x05 | 0x0D | 0x15 | 0x1D | 0x25 | 0x2D | 0x3D => {
                let ri = (op >> 3) & 7;
                let t = r.dec8(r.reg(ri));
                r.set_reg(ri, t);
                self.next(r, 1, 4);
            }
            0x06 | 0x0E | 0x16 | 0x1E | 0x26 | 0x2E | 0x3E => {
                r.set_reg((op >> 3) & 7, v8);
                self.next(r, 2, 8);
            }
            0x07 | 0x0F | 0x17 | 0x1F => {
                let t = r.cb_shift(op >> 3, r.a);
                r.f &= !FLAG_Z; // the A-only rotations always clear Z
                r.a = t;
                self.next(r, 1, 4);
            }
            0x08 => {
                let (addr, value) = (v16, r.sp as u8);
                self.write_c(r, addr, value);
                let (addr, value) = (v16.wrapping_add(1), (r.sp >> 8) as u8);
                self.write_c(r, addr, value);
                self.next(r, 3, 20);
            }
            0x10 => self.next(r, 2, 4), // STOP: a 2-byte no-op on DMG in PyBoy
            0x18 => {
                r.pc = r.pc.wrapping_add(2).wrapping_add(v8 as i8 as i16 as u16);
                r.add(12);
            }
            0x20 | 0x28 | 0x30 | 0x38 => {
                r.pc = r.pc.wrapping_add(2);
                if r.condition(op) {
                    r.pc = r.pc.wrapping_add(v8 as i8 as i16 as u16);
                    r.add(12);
                } else {
                    r.add(8);
                }
            }
            0x27 => {
                let mut t = r.a as i32;
                let mut corr = 0;
                if r.flag(FLAG_H) {
                    corr |= 0x06;
                }
                if r.flag(FLAG_C) {
                    corr |= 0x60;
                }
                if r.flag(FLAG_N) {
                    t -= corr;
                } else {
                    if t & 0x0F > 0x09 {
                        corr |= 0x06;
                    }
                    if t > 0x99 {
                        corr |= 0x60;
                    }
                    t += corr;
                }
                let z = ((t & 0xFF) == 0) as u8;
                let c = (corr & 0x60 != 0) as u8;
                r.f = (r.f & FLAG_N) | z << 7 | c << 4;
                r.a = t as u8;
                self.next(r, 1, 4);
            }
            0x2F => {
                r.a = !r.a;
                r.f = (r.f & 0x90) | 0x60;
                self.next(r, 1, 4);
            }
            0x37 => {
                r.f = (r.f & FLAG_Z) | FLAG_C;
                self.next(r, 1, 4);
            }
            0x3F => {
                r.f = (r.f & FLAG_Z) | ((r.f & FLAG_C) ^ FLAG_C);
                self.next(r, 1, 4);
            }
            0x76 => {
                // PC stays on the HALT; leaving it adds the 1 (see check_interrupts).
                self.halted = true;
                self.halted_during_ei = self.ei_delay == 1;
                self.bail = true;
                r.check_after();
                r.add(4);
            }
            0x40 => self.ld_r_r::<0, 0>(r),
            0x41 => self.ld_r_r::<0, 1>(r),
            0x42 => self.ld_r_r::<0, 2>(r),
            0x43 => self.ld_r_r::<0, 3>(r),
            0x44 => self.ld_r_r::<0, 4>(r),
            0x45 => self.ld_r_r::<0, 5>(r),
            0x46 => self.ld_r_r::<0, 6>(r),
            0x47 => self.ld_r_r::<0, 7>(r),
            0x48 => self.ld_r_r::<1, 0>(r),
            0x49 => self.ld_r_r::<1, 1>(r),
            0x4A => self.ld_r_r::<1, 2>(r),
            0x4B => self.ld_r_r::<1, 3>(r),
            0x4C => self.ld_r_r::<1, 4>(r),
            0x4D => self.ld_r_r::<1, 5>(r),
            0x4E => self.ld_r_r::<1, 6>(r),
            0x4F => self.ld_r_r::<1, 7>(r),
            0x50 => self.ld_r_r::<2, 0>(r),
            0x51 => self.ld_r_r::<2, 1>(r),
            0x52 => self.ld_r_r::<2, 2>(r),
            0x53 => self.ld_r_r::<2, 3>(r),
            0x54 => self.ld_r_r::<2, 4>(r),
            0x55 => self.ld_r_r::<2, 5>(r),
            0x56 => self.ld_r_r::<2, 6>(r),
            0x57 => self.ld_r_r::<2, 7>(r),
            0x58 => self.ld_r_r::<3, 0>(r),
            0x59 => self.ld_r_r::<3, 1>(r),
            0x5A => self.ld_r_r::<3, 2>(r),
            0x5B => self.ld_r_r::<3, 3>(r),
            0x5C => self.ld_r_r::<3, 4>(r),
            0x5D => self.ld_r_r::<3, 5>(r),
            0x5E => self.ld_r_r::<3, 6>(r),
            0x5F => self.ld_r_r::<3, 7>(r),
            0x60 => self.ld_r_r::<4, 0>(r),
            0x61 => self.ld_r_r::<4, 1>(r),
            0x62 => self.ld_r_r::<4, 2>(r),
            0x63 => self.ld_r_r::<4, 3>(r),
            0x64 => self.ld_r_r::<4, 4>(r),
            0x65 => self.ld_r_r::<4, 5>(r),
            0x66 => self.ld_r_r::<4, 6>(r),
            0x67 => self.ld_r_r::<4, 7>(r),
            0x68 => self.ld_r_r::<5, 0>(r),
            0x69 => self.ld_r_r::<5, 1>(r),
            0x6A => self.ld_r_r::<5, 2>(r),
            0x6B => self.ld_r_r::<5, 3>(r),
            0x6C => self.ld_r_r::<5, 4>(r),
            0x6D => self.ld_r_r::<5, 5>(r),
            0x6E => self.ld_r_r::<5, 6>(r),
            0x6F => self.ld_r_r::<5, 7>(r),
            0x70 => self.ld_r_r::<6, 0>(r),
            0x71 => self.ld_r_r::<6, 1>(r),
            0x72 => self.ld_r_r::<6, 2>(r),
            0x73 => self.ld_r_r::<6, 3>(r),
            0x74 => self.ld_r_r::<6, 4>(r),
            0x75 => self.ld_r_r::<6, 5>(r),
            0x77 => self.ld_r_r::<6, 7>(r),
            0x78 => self.ld_r_r::<7, 0>(r),
            0x79 => self.ld_r_r::<7, 1>(r),
            0x7A => self.ld_r_r::<7, 2>(r),
            0x7B => self.ld_r_r::<7, 3>(r),
            0x7C => self.ld_r_r::<7, 4>(r),
            0x7D => self.ld_r_r::<7, 5>(r),
            0x7E => self.ld_r_r::<7, 6>(r),
            0x7F => self.ld_r_r::<7, 7>(r),
            0x80 => self.alu_r::<0, 0>(r),
            0x81 => self.alu_r::<0, 1>(r),
            0x82 => self.alu_r::<0, 2>(r),
            0x83 => self.alu_r::<0, 3>(r),
            0x84 => self.alu_r::<0, 4>(r),
            0x85 => self.alu_r::<0, 5>(r),
            0x86 => self.alu_r::<0, 6>(r),
            0x87 => self.alu_r::<0, 7>(r),
            0x88 => self.alu_r::<1, 0>(r),
            0x89 => self.alu_r::<1, 1>(r),
            0x8A => self.alu_r::<1, 2>(r),
            0x8B => self.alu_r::<1, 3>(r),
            0x8C => self.alu_r::<1, 4>(r),
            0x8D => self.alu_r::<1, 5>(r),
            0x8E => self.alu_r::<1, 6>(r),
            0x8F => self.alu_r::<1, 7>(r),
            0x90 => self.alu_r::<2, 0>(r),
            0x91 => self.alu_r::<2, 1>(r),
            0x92 => self.alu_r::<2, 2>(r),
            0x93 => self.alu_r::<2, 3>(r),
            0x94 => self.alu_r::<2, 4>(r),
            0x95 => self.alu_r::<2, 5>(r),
            0x96 => self.alu_r::<2, 6>(r),
            0x97 => self.alu_r::<2, 7>(r),
            0x98 => self.alu_r::<3, 0>(r),
            0x99 => self.alu_r::<3, 1>(r),
            0x9A => self.alu_r::<3, 2>(r),
            0x9B => self.alu_r::<3, 3>(r),
            0x9C => self.alu_r::<3, 4>(r),
            0x9D => self.alu_r::<3, 5>(r),
            0x9E => self.alu_r::<3, 6>(r),
            0x9F => self.alu_r::<3, 7>(r),
            0xA0 => self.alu_r::<4, 0>(r),
            0xA1 => self.alu_r::<4, 1>(r),
            0xA2 => self.alu_r::<4, 2>(r),
            0xA3 => self.alu_r::<4, 3>(r),
            0xA4 => self.alu_r::<4, 4>(r),
            0xA5 => self.alu_r::<4, 5>(r),
            0xA6 => self.alu_r::<4, 6>(r),
            0xA7 => self.alu_r::<4, 7>(r),
            0xA8 => self.alu_r::<5, 0>(r),
            0xA9 => self.alu_r::<5, 1>(r),
            0xAA => self.alu_r::<5, 2>(r),
            0xAB => self.alu_r::<5, 3>(r),
            0xAC => self.alu_r::<5, 4>(r),
            0xAD => self.alu_r::<5, 5>(r),
            0xAE => self.alu_r::<5, 6>(r),
            0xAF => self.alu_r::<5, 7>(r),
            0xB0 => self.alu_r::<6, 0>(r),
            0xB1 => self.alu_r::<6, 1>(r),
            0xB2 => self.alu_r::<6, 2>(r),
            0xB3 => self.alu_r::<6, 3>(r),
            0xB4 => self.alu_r::<6, 4>(r),
            0xB5 => self.alu_r::<6, 5>(r),
            0xB6 => self.alu_r::<6, 6>(r),
            0xB7 => self.alu_r::<6, 7>(r),
            0xB8 => self.alu_r::<7, 0>(r),
            0xB9 => self.alu_r::<7, 1>(r),
            0xBA => self.alu_r::<7, 2>(r),
            0xBB => self.alu_r::<7, 3>(r),
            0xBC => self.alu_r::<7, 4>(r),
            0xBD => self.alu_r::<7, 5>(r),
            0xBE => self.alu_r::<7, 6>(r),
            0xBF => self.alu_r::<7, 7>(r),
            0xC6 | 0xCE | 0xD6 | 0xDE | 0xE6 | 0xEE | 0xF6 | 0xFE => {
                r.alu((op >> 3) & 7, v8);
                self.next(r, 2, 8);
            }
            0xC0 | 0xC8 | 0xD0 | 0xD8 => {
                if r.condition(op) {
                    r.add(8);
                    r.pc = self.pop16(r);
                    r.add(8);
                } else {
                    self.next(r, 1, 8);
                }
            }
            0xC9 => {
                r.add(4);
                r.pc = self.pop16(r);
                r.add(8);
            }
            0xD9 => {
                self.ime = true;
                self.ei_delay = 0;
                self.bail = self.pending() != 0;
                r.check_after();
                r.add(4);
                r.pc = self.pop16(r);
                r.add(8);
            }
            0xC1 | 0xD1 | 0xE1 | 0xF1 => {
                let v = self.pop16(r);
                match op {
                    0xC1 => r.set_bc(v),
                    0xD1 => r.set_de(v),
                    0xE1 => r.hl = v,
                    _ => {
                        r.a = (v >> 8) as u8;
                        r.f = v as u8 & 0xF0;
                    }
                }
                self.next(r, 1, 8);
            }
            0xC5 | 0xD5 | 0xE5 | 0xF5 => {
                let v = match op {
                    0xC5 => r.bc(),
                    0xD5 => r.de(),
                    0xE5 => r.hl,
                    _ => ((r.a as u16) << 8) | r.f as u16,
                };
                r.add(8);
                self.push16(r, v);
                self.next(r, 1, 4);
            }
            0xC2 | 0xCA | 0xD2 | 0xDA => {
                if r.condition(op) {
                    r.pc = v16;
                    r.add(16);
                } else {
                    self.next(r, 3, 12);
                }
            }
            0xC3 => {
                r.pc = v16;
                r.add(16);
            }
            0xE9 => {
                r.pc = r.hl;
                r.add(4);
            }
            0xC4 | 0xCC | 0xD4 | 0xDC | 0xCD => {
                r.pc = r.pc.wrapping_add(3);
                if op == 0xCD || r.condition(op) {
                    r.add(16);
                    self.push16(r, r.pc);
                    r.pc = v16;
                    r.add(4);
                } else {
                    r.add(12);
                }
            }
            0xC7 | 0xCF | 0xD7 | 0xDF | 0xE7 | 0xEF | 0xF7 | 0xFF => {
                r.pc = r.pc.wrapping_add(1);
                r.add(8);
                self.push16(r, r.pc);
                r.pc = (op & 0x38) as u16;
                r.add(4);
            }
            0xE0 => {
                r.add(4);
                let (addr, value) = (0xFF00 | v8 as u16, r.a);
                self.write_c(r, addr, value);
                self.next(r, 2, 8);
            }
            0xF0 => {
                r.add(4);
                r.a = self.read_c(r, 0xFF00 | v8 as u16);
                self.next(r, 2, 8);
            }
            0xE2 => {
                let (addr, value) = (0xFF00 | r.c as u16, r.a);
                self.write_c(r, addr, value);
                self.next(r, 1, 8);
            }
            0xF2 => {
                r.a = self.read_c(r, 0xFF00 | r.c as u16);
                self.next(r, 1, 8);
            }
            0xEA => {
                r.add(8);
                let (addr, value) = (v16, r.a);
                self.write_c(r, addr, value);
                self.next(r, 3, 8);
            }
            0xFA => {
                r.add(8);
                r.a = self.read_c(r, v16);
                self.next(r, 3, 8);
            }
            0xE8 => {
                r.sp = r.sp_plus(v8);
                self.next(r, 2, 16);
            }
            0xF8 => {
                r.hl = r.sp_plus(v8);
                self.next(r, 2, 12);
            }
            0xF9 => {
                r.sp = r.hl;
                self.next(r, 1, 8);
            }
            0xF3 => {
                self.ime = false;
                self.ei_delay = 0;
                self.next(r, 1, 4);
            }
            0xFB => {
                if self.ei_delay == 0 {
                    self.ei_delay = 2;
                }
                r.check_after();
                self.next(r, 1, 4);
            }
            _ => {
                // No instruction (0xDB is PyBoy's breakpoint): PyBoy adds no cycles and never
                // leaves the frame. Stop here and report it instead.
                self.stall = Some(Stall::UnusedOpcode {
                    opcode: op,
                    pc: r.pc,
                });
                self.bail = true;
                r.check_after();
            }
        }
    }

    /// LD r, r' (0x40-0x7F but HALT): the source or destination 6 is (HL).
    #[inline(always)]
    fn ld_r_r<const D: u8, const S: u8>(&mut self, r: &mut Hot) {
        if S == 6 {
            if D == 7 {
                self.mao = 4; // PyBoy's LD A,(HL) accesses at offset 4, the others at 0
            }
            let v = self.read_c(r, r.hl);
            self.mao = 0;
            r.set_reg(D, v);
            self.next(r, 1, 8);
        } else if D == 6 {
            let (addr, value) = (r.hl, r.reg(S));
            self.write_c(r, addr, value);
            self.next(r, 1, 8);
        } else {
            r.set_reg(D, r.reg(S));
            self.next(r, 1, 4);
        }
    }

    /// The register ALU block (0x80-0xBF).
    #[inline(always)]
    fn alu_r<const OP: u8, const S: u8>(&mut self, r: &mut Hot) {
        if S == 6 {
            let v = self.read_c(r, r.hl);
            r.alu(OP, v);
            self.next(r, 1, 8);
        } else {
            r.alu(OP, r.reg(S));
            self.next(r, 1, 4);
        }
    }

    #[inline(always)]
    fn execute_cb(&mut self, r: &mut Hot, op: u8) {
        match op {
            0x00 => self.cb::<0x00>(r),
            0x01 => self.cb::<0x01>(r),
            0x02 => self.cb::<0x02>(r),
            0x03 => self.cb::<0x03>(r),
            0x04 => self.cb::<0x04>(r),
            0x05 => self.cb::<0x05>(r),
            0x06 => self.cb::<0x06>(r),
            0x07 => self.cb::<0x07>(r),
            0x08 => self.cb::<0x08>(r),
            0x09 => self.cb::<0x09>(r),
            0x0A => self.cb::<0x0A>(r),
            0x0B => self.cb::<0x0B>(r),
            0x0C => self.cb::<0x0C>(r),
            0x0D => self.cb::<0x0D>(r),
            0x0E => self.cb::<0x0E>(r),
            0x0F => self.cb::<0x0F>(r),
            0x10 => self.cb::<0x10>(r),
            0x11 => self.cb::<0x11>(r),
            0x12 => self.cb::<0x12>(r),
            0x13 => self.cb::<0x13>(r),
            0x14 => self.cb::<0x14>(r),
            0x15 => self.cb::<0x15>(r),
            0x16 => self.cb::<0x16>(r),
            0x17 => self.cb::<0x17>(r),
            0x18 => self.cb::<0x18>(r),
            0x19 => self.cb::<0x19>(r),
            0x1A => self.cb::<0x1A>(r),
            0x1B => self.cb::<0x1B>(r),
            0x1C => self.cb::<0x1C>(r),
            0x1D => self.cb::<0x1D>(r),
            0x1E => self.cb::<0x1E>(r),
            0x1F => self.cb::<0x1F>(r),
            0x20 => self.cb::<0x20>(r),
            0x21 => self.cb::<0x21>(r),
            0x22 => self.cb::<0x22>(r),
            0x23 => self.cb::<0x23>(r),
            0x24 => self.cb::<0x24>(r),
            0x25 => self.cb::<0x25>(r),
            0x26 => self.cb::<0x26>(r),
            0x27 => self.cb::<0x27>(r),
            0x28 => self.cb::<0x28>(r),
            0x29 => self.cb::<0x29>(r),
            0x2A => self.cb::<0x2A>(r),
            0x2B => self.cb::<0x2B>(r),
            0x2C => self.cb::<0x2C>(r),
            0x2D => self.cb::<0x2D>(r),
            0x2E => self.cb::<0x2E>(r),
            0x2F => self.cb::<0x2F>(r),
            0x30 => self.cb::<0x30>(r),
            0x31 => self.cb::<0x31>(r),
            0x32 => self.cb::<0x32>(r),
            0x33 => self.cb::<0x33>(r),
            0x34 => self.cb::<0x34>(r),
            0x35 => self.cb::<0x35>(r),
            0x36 => self.cb::<0x36>(r),
            0x37 => self.cb::<0x37>(r),
            0x38 => self.cb::<0x38>(r),
            0x39 => self.cb::<0x39>(r),
            0x3A => self.cb::<0x3A>(r),
            0x3B => self.cb::<0x3B>(r),
            0x3C => self.cb::<0x3C>(r),
            0x3D => self.cb::<0x3D>(r),
            0x3E => self.cb::<0x3E>(r),
            0x3F => self.cb::<0x3F>(r),
            0x40 => self.cb::<0x40>(r),
            0x41 => self.cb::<0x41>(r),
            0x42 => self.cb::<0x42>(r),
            0x43 => self.cb::<0x43>(r),
            0x44 => self.cb::<0x44>(r),
            0x45 => self.cb::<0x45>(r),
            0x46 => self.cb::<0x46>(r),
            0x47 => self.cb::<0x47>(r),
            0x48 => self.cb::<0x48>(r),
            0x49 => self.cb::<0x49>(r),
            0x4A => self.cb::<0x4A>(r),
            0x4B => self.cb::<0x4B>(r),
            0x4C => self.cb::<0x4C>(r),
            0x4D => self.cb::<0x4D>(r),
            0x4E => self.cb::<0x4E>(r),
            0x4F => self.cb::<0x4F>(r),
            0x50 => self.cb::<0x50>(r),
            0x51 => self.cb::<0x51>(r),
            0x52 => self.cb::<0x52>(r),
            0x53 => self.cb::<0x53>(r),
            0x54 => self.cb::<0x54>(r),
            0x55 => self.cb::<0x55>(r),
            0x56 => self.cb::<0x56>(r),
            0x57 => self.cb::<0x57>(r),
            0x58 => self.cb::<0x58>(r),
            0x59 => self.cb::<0x59>(r),
            0x5A => self.cb::<0x5A>(r),
            0x5B => self.cb::<0x5B>(r),
            0x5C => self.cb::<0x5C>(r),
            0x5D => self.cb::<0x5D>(r),
            0x5E => self.cb::<0x5E>(r),
            0x5F => self.cb::<0x5F>(r),
            0x60 => self.cb::<0x60>(r),
            0x61 => self.cb::<0x61>(r),
            0x62 => self.cb::<0x62>(r),
            0x63 => self.cb::<0x63>(r),
            0x64 => self.cb::<0x64>(r),
            0x65 => self.cb::<0x65>(r),
            0x66 => self.cb::<0x66>(r),
            0x67 => self.cb::<0x67>(r),
            0x68 => self.cb::<0x68>(r),
            0x69 => self.cb::<0x69>(r),
            0x6A => self.cb::<0x6A>(r),
            0x6B => self.cb::<0x6B>(r),
            0x6C => self.cb::<0x6C>(r),
            0x6D => self.cb::<0x6D>(r),
            0x6E => self.cb::<0x6E>(r),
            0x6F => self.cb::<0x6F>(r),
            0x70 => self.cb::<0x70>(r),
            0x71 => self.cb::<0x71>(r),
            0x72 => self.cb::<0x72>(r),
            0x73 => self.cb::<0x73>(r),
            0x74 => self.cb::<0x74>(r),
            0x75 => self.cb::<0x75>(r),
            0x76 => self.cb::<0x76>(r),
            0x77 => self.cb::<0x77>(r),
            0x78 => self.cb::<0x78>(r),
            0x79 => self.cb::<0x79>(r),
            0x7A => self.cb::<0x7A>(r),
            0x7B => self.cb::<0x7B>(r),
            0x7C => self.cb::<0x7C>(r),
            0x7D => self.cb::<0x7D>(r),
            0x7E => self.cb::<0x7E>(r),
            0x7F => self.cb::<0x7F>(r),
            0x80 => self.cb::<0x80>(r),
            0x81 => self.cb::<0x81>(r),
            0x82 => self.cb::<0x82>(r),
            0x83 => self.cb::<0x83>(r),
            0x84 => self.cb::<0x84>(r),
            0x85 => self.cb::<0x85>(r),
            0x86 => self.cb::<0x86>(r),
            0x87 => self.cb::<0x87>(r),
            0x88 => self.cb::<0x88>(r),
            0x89 => self.cb::<0x89>(r),
            0x8A => self.cb::<0x8A>(r),
            0x8B => self.cb::<0x8B>(r),
            0x8C => self.cb::<0x8C>(r),
            0x8D => self.cb::<0x8D>(r),
            0x8E => self.cb::<0x8E>(r),
            0x8F => self.cb::<0x8F>(r),
            0x90 => self.cb::<0x90>(r),
            0x91 => self.cb::<0x91>(r),
            0x92 => self.cb::<0x92>(r),
            0x93 => self.cb::<0x93>(r),
            0x94 => self.cb::<0x94>(r),
            0x95 => self.cb::<0x95>(r),
            0x96 => self.cb::<0x96>(r),
            0x97 => self.cb::<0x97>(r),
            0x98 => self.cb::<0x98>(r),
            0x99 => self.cb::<0x99>(r),
            0x9A => self.cb::<0x9A>(r),
            0x9B => self.cb::<0x9B>(r),
            0x9C => self.cb::<0x9C>(r),
            0x9D => self.cb::<0x9D>(r),
            0x9E => self.cb::<0x9E>(r),
            0x9F => self.cb::<0x9F>(r),
            0xA0 => self.cb::<0xA0>(r),
            0xA1 => self.cb::<0xA1>(r),
            0xA2 => self.cb::<0xA2>(r),
            0xA3 => self.cb::<0xA3>(r),
            0xA4 => self.cb::<0xA4>(r),
            0xA5 => self.cb::<0xA5>(r),
            0xA6 => self.cb::<0xA6>(r),
            0xA7 => self.cb::<0xA7>(r),
            0xA8 => self.cb::<0xA8>(r),
            0xA9 => self.cb::<0xA9>(r),
            0xAA => self.cb::<0xAA>(r),
            0xAB => self.cb::<0xAB>(r),
            0xAC => self.cb::<0xAC>(r),
            0xAD => self.cb::<0xAD>(r),
            0xAE => self.cb::<0xAE>(r),
            0xAF => self.cb::<0xAF>(r),
            0xB0 => self.cb::<0xB0>(r),
            0xB1 => self.cb::<0xB1>(r),
            0xB2 => self.cb::<0xB2>(r),
            0xB3 => self.cb::<0xB3>(r),
            0xB4 => self.cb::<0xB4>(r),
            0xB5 => self.cb::<0xB5>(r),
            0xB6 => self.cb::<0xB6>(r),
            0xB7 => self.cb::<0xB7>(r),
            0xB8 => self.cb::<0xB8>(r),
            0xB9 => self.cb::<0xB9>(r),
            0xBA => self.cb::<0xBA>(r),
            0xBB => self.cb::<0xBB>(r),
            0xBC => self.cb::<0xBC>(r),
            0xBD => self.cb::<0xBD>(r),
            0xBE => self.cb::<0xBE>(r),
            0xBF => self.cb::<0xBF>(r),
            0xC0 => self.cb::<0xC0>(r),
            0xC1 => self.cb::<0xC1>(r),
            0xC2 => self.cb::<0xC2>(r),
            0xC3 => self.cb::<0xC3>(r),
            0xC4 => self.cb::<0xC4>(r),
            0xC5 => self.cb::<0xC5>(r),
            0xC6 => self.cb::<0xC6>(r),
            0xC7 => self.cb::<0xC7>(r),
            0xC8 => self.cb::<0xC8>(r),
            0xC9 => self.cb::<0xC9>(r),
            0xCA => self.cb::<0xCA>(r),
            0xCB => self.cb::<0xCB>(r),
            0xCC => self.cb::<0xCC>(r),
            0xCD => self.cb::<0xCD>(r),
            0xCE => self.cb::<0xCE>(r),
            0xCF => self.cb::<0xCF>(r),
            0xD0 => self.cb::<0xD0>(r),
            0xD1 => self.cb::<0xD1>(r),
            0xD2 => self.cb::<0xD2>(r),
            0xD3 => self.cb::<0xD3>(r),
            0xD4 => self.cb::<0xD4>(r),
            0xD5 => self.cb::<0xD5>(r),
            0xD6 => self.cb::<0xD6>(r),
            0xD7 => self.cb::<0xD7>(r),
            0xD8 => self.cb::<0xD8>(r),
            0xD9 => self.cb::<0xD9>(r),
            0xDA => self.cb::<0xDA>(r),
            0xDB => self.cb::<0xDB>(r),
            0xDC => self.cb::<0xDC>(r),
            0xDD => self.cb::<0xDD>(r),
            0xDE => self.cb::<0xDE>(r),
            0xDF => self.cb::<0xDF>(r),
            0xE0 => self.cb::<0xE0>(r),
            0xE1 => self.cb::<0xE1>(r),
            0xE2 => self.cb::<0xE2>(r),
            0xE3 => self.cb::<0xE3>(r),
            0xE4 => self.cb::<0xE4>(r),
            0xE5 => self.cb::<0xE5>(r),
            0xE6 => self.cb::<0xE6>(r),
            0xE7 => self.cb::<0xE7>(r),
            0xE8 => self.cb::<0xE8>(r),
            0xE9 => self.cb::<0xE9>(r),
            0xEA => self.cb::<0xEA>(r),
            0xEB => self.cb::<0xEB>(r),
            0xEC => self.cb::<0xEC>(r),
            0xED => self.cb::<0xED>(r),
            0xEE => self.cb::<0xEE>(r),
            0xEF => self.cb::<0xEF>(r),
            0xF0 => self.cb::<0xF0>(r),
            0xF1 => self.cb::<0xF1>(r),
            0xF2 => self.cb::<0xF2>(r),
            0xF3 => self.cb::<0xF3>(r),
            0xF4 => self.cb::<0xF4>(r),
            0xF5 => self.cb::<0xF5>(r),
            0xF6 => self.cb::<0xF6>(r),
            0xF7 => self.cb::<0xF7>(r),
            0xF8 => self.cb::<0xF8>(r),
            0xF9 => self.cb::<0xF9>(r),
            0xFA => self.cb::<0xFA>(r),
            0xFB => self.cb::<0xFB>(r),
            0xFC => self.cb::<0xFC>(r),
            0xFD => self.cb::<0xFD>(r),
            0xFE => self.cb::<0xFE>(r),
            0xFF => self.cb::<0xFF>(r),
        }
    }

    #[inline(always)]
    fn cb<const OP: u8>(&mut self, r: &mut Hot) {
        let op = OP;
        let ri = op & 7;
        let group = op >> 6;
        let n = (op >> 3) & 7;
        if ri == 6 {
            r.add(4);
            let v = self.read_c(r, r.hl);
            if group == 1 {
                r.f = (r.f & FLAG_C) | FLAG_H | (((v & (1 << n)) == 0) as u8) << 7;
                self.next(r, 2, 8);
                return;
            }
            let t = match group {
                0 => r.cb_shift(n, v),
                2 => v & !(1 << n),
                _ => v | (1 << n),
            };
            r.add(4);
            let (addr, value) = (r.hl, t);
            self.write_c(r, addr, value);
            self.next(r, 2, 8);
        } else {
            let v = r.reg(ri);
            match group {
                0 => {
                    let t = r.cb_shift(n, v);
                    r.set_reg(ri, t);
                }
                1 => {
                    r.f = (r.f & FLAG_C) | FLAG_H | (((v & (1 << n)) == 0) as u8) << 7;
                }
                2 => r.set_reg(ri, v & !(1 << n)),
                _ => r.set_reg(ri, v | (1 << n)),
            }
            self.next(r, 2, 8);
        }
    }
}
