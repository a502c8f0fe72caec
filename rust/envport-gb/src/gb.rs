//! The machine: memory bus, interrupts, OAM DMA, joypad, serial (no link) and the frame loop.
//! The CPU runs in batches up to the next scheduled event and the peripherals are brought up
//! to date on register access and after each batch, as in PyBoy 2.8.1, so that timing-visible
//! values (LY, STAT, DIV, TIMA, IF) agree with it cycle for cycle.

use crate::cart::{Cartridge, RomError};
use crate::cpu::FetchWindow;
use crate::lcd::{Lcd, LineEvent, FRAME_CYCLES};
use crate::render::Screen;
use crate::timer::{Timer, MAX_CYCLES};

pub const INTR_TIMER: u8 = 4;
pub const INTR_SERIAL: u8 = 8;
pub const INTR_JOYPAD: u8 = 16;

/// Buttons as bits of `GameBoy::buttons`: the bit order of `BUTTON_NAMES`.
pub const BUTTON_NAMES: [&str; 8] = ["right", "left", "up", "down", "a", "b", "select", "start"];

/// The boot ROM written for this project (roms/boot.s): sets the documented post-boot DMG
/// registers and unmaps itself at 0x00FE. Its bytes are checked against the sdcc build of
/// boot.s by the Python tests.
pub fn project_boot_rom() -> Vec<u8> {
    let code: [u8; 25] = [
        0x31, 0xFE, 0xFF, // ld sp, #0xFFFE
        0x3E, 0xFC, // ld a, #0xFC
        0xE0, 0x47, // ldh (0x47), a
        0x3E, 0x91, // ld a, #0x91
        0xE0, 0x40, // ldh (0x40), a
        0x21, 0xB0, 0x01, // ld hl, #0x01B0
        0xE5, // push hl
        0xF1, // pop af
        0x01, 0x13, 0x00, // ld bc, #0x0013
        0x11, 0xD8, 0x00, // ld de, #0x00D8
        0x21, 0x4D, 0x01, // ld hl, #0x014D  (then jp 0x00FE below)
    ];
    let mut rom = vec![0xFFu8; 256];
    rom[..code.len()].copy_from_slice(&code);
    rom[code.len()..code.len() + 3].copy_from_slice(&[0xC3, 0xFE, 0x00]); // jp 0x00FE
    rom[0xFE] = 0xE0; // ldh (0x50), a
    rom[0xFF] = 0x50;
    rom
}

#[derive(Clone)]
pub struct Serial {
    pub sb: u8,
    pub sc: u8,
    pub transfer_enabled: bool,
    pub internal_clock: bool,
    pub cycles_to_interrupt: i64,
    pub last_cycles: u64,
    pub clock: u64,
    pub clock_target: u64,
}

impl Default for Serial {
    fn default() -> Self {
        Serial {
            sb: 0xFF,
            sc: 0b0111_1110,
            transfer_enabled: false,
            internal_clock: false,
            cycles_to_interrupt: 0,
            last_cycles: 0,
            clock: 0,
            clock_target: MAX_CYCLES as u64,
        }
    }
}

impl Serial {
    fn set_sc(&mut self, value: u8) {
        self.sc = value | 0b0111_1110;
        self.transfer_enabled = self.sc & 0x80 != 0;
        self.internal_clock = self.sc & 1 != 0;
        if self.internal_clock {
            // No link: a transfer on the internal clock completes after 8 bits of 128 cycles.
            self.clock_target = self.clock + 8 * 128;
            self.cycles_to_interrupt = (self.clock_target - self.clock) as i64;
        } else {
            self.transfer_enabled = false;
            self.clock_target = MAX_CYCLES as u64;
            self.cycles_to_interrupt = MAX_CYCLES;
        }
    }

    fn tick(&mut self, now: u64) -> bool {
        let cycles = now.wrapping_sub(self.last_cycles);
        if cycles == 0 {
            return false;
        }
        self.last_cycles = now;
        self.clock = self.clock.wrapping_add(cycles);
        let mut raised = false;
        if self.transfer_enabled && self.clock >= self.clock_target {
            self.sc &= 0b0111_1111;
            self.transfer_enabled = false;
            self.clock_target = MAX_CYCLES as u64;
            raised = true;
        }
        self.cycles_to_interrupt = if self.transfer_enabled {
            self.clock_target.wrapping_sub(self.clock) as i64
        } else {
            MAX_CYCLES
        };
        raised
    }
}

/// Why emulation stopped inside a frame (PyBoy itself would hang or drop to its debugger).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stall {
    /// One of the 11 opcodes that are no instruction (D3 DB DD E3 E4 EB EC ED F4 FC FD).
    UnusedOpcode { opcode: u8, pc: u16 },
}

#[derive(Clone)]
pub struct GameBoy {
    // CPU
    pub a: u8,
    pub f: u8,
    pub b: u8,
    pub c: u8,
    pub d: u8,
    pub e: u8,
    pub hl: u16,
    pub sp: u16,
    pub pc: u16,
    pub ime: bool,
    pub ei_delay: u8,
    pub halted: bool,
    pub halted_during_ei: bool,
    pub stopped: bool,
    pub interrupt_queued: bool,
    pub if_reg: u8,
    pub ie_reg: u8,
    pub cycles: u64,
    pub(crate) bail: bool,
    /// Cycles between the start of the instruction's current step and the bus access: PyBoy
    /// brings the PPU to `cycles + offset` before VRAM/OAM/LCD-register accesses.
    pub(crate) mao: u64,
    pub(crate) fetch: FetchWindow,
    pub stall: Option<Stall>,
    // Memory
    pub cart: Cartridge,
    pub boot_rom: Vec<u8>,
    pub bootrom_enabled: bool,
    /// Inline (not behind a pointer): the bus reads them without an indirection, and a batch of
    /// machines in one `Vec` shows them at a fixed stride (the zero-copy NumPy views).
    pub wram: [u8; 0x2000],
    pub hram: [u8; 0x7F],
    pub io: Vec<u8>,
    pub unusable: Vec<u8>,
    // OAM DMA
    pub dma_active: bool,
    pub dma_reading: bool,
    pub dma_source: u8,
    pub dma_index: u8,
    pub dma_start_cycle: u64,
    // Peripherals
    pub timer: Timer,
    pub lcd: Lcd,
    pub serial: Serial,
    pub joy_directional: u8,
    pub joy_standard: u8,
    pub screen: Screen,
    pub render: bool,
    pub frame_count: u64,
    /// The cycle count of the last catch-up after a batch (see `catch_up`); not state.
    pub(crate) caught_up_at: u64,
}

impl GameBoy {
    /// A machine at power-on, about to run `boot_rom` (256 bytes) from address 0.
    pub fn new(rom: &[u8], boot_rom: Option<&[u8]>) -> Result<GameBoy, RomError> {
        let cart = Cartridge::new(rom)?;
        let boot = match boot_rom {
            Some(b) => b.to_vec(),
            None => project_boot_rom(),
        };
        let mut g = GameBoy {
            a: 0,
            f: 0,
            b: 0,
            c: 0,
            d: 0,
            e: 0,
            hl: 0,
            sp: 0,
            pc: 0,
            ime: false,
            ei_delay: 0,
            halted: false,
            halted_during_ei: false,
            stopped: false,
            interrupt_queued: false,
            if_reg: 0,
            ie_reg: 0,
            cycles: 0,
            bail: false,
            mao: 0,
            fetch: FetchWindow::default(),
            stall: None,
            cart,
            boot_rom: boot,
            bootrom_enabled: true,
            wram: [0; 0x2000],
            hram: [0; 0x7F],
            io: vec![0; 0x4C],
            unusable: vec![0; 0x60],
            dma_active: false,
            dma_reading: false,
            dma_source: 0,
            dma_index: 0,
            dma_start_cycle: 0,
            timer: Timer::default(),
            lcd: Lcd::default(),
            serial: Serial::default(),
            joy_directional: 0x0F,
            joy_standard: 0x0F,
            screen: Screen::default(),
            render: true,
            frame_count: 0,
            caught_up_at: 0,
        };
        g.refresh_fetch();
        Ok(g)
    }

    // ----------------------------------------------------------------------------------------
    // Peripheral catch-up

    #[inline]
    pub(crate) fn lcd_tick(&mut self, now: u64) {
        let ticked = self.lcd.tick(now);
        self.lcd_event(ticked);
    }

    #[inline(always)]
    fn lcd_event(&mut self, (flags, event): (u8, LineEvent)) {
        self.if_reg |= flags;
        match event {
            LineEvent::None => {}
            LineEvent::DrawLine(ly) => {
                if self.render {
                    self.screen.draw_line(&self.lcd, ly);
                }
            }
            LineEvent::Blank => self.screen.blank(&self.lcd),
        }
    }

    #[inline]
    fn timer_tick(&mut self) {
        if self.timer.tick(self.cycles) {
            self.if_reg |= INTR_TIMER;
        }
    }

    #[inline]
    fn serial_tick(&mut self) {
        if self.serial.tick(self.cycles) {
            self.if_reg |= INTR_SERIAL;
        }
    }

    fn sync_oam_dma(&mut self, offset: u64) {
        if !self.dma_active || self.dma_reading {
            return;
        }
        let elapsed = (self.cycles + offset) as i64 - self.dma_start_cycle as i64;
        if elapsed < 4 {
            return;
        }
        let target = (elapsed / 4).min(0xA0) as u16;
        while (self.dma_index as u16) < target {
            self.dma_reading = true;
            let mut source = self.dma_source;
            if source >= 0xFE {
                source -= 0x20;
            }
            let v = self.read(((source as u16) << 8) | self.dma_index as u16);
            self.dma_reading = false;
            self.lcd.oam[self.dma_index as usize] = v;
            self.dma_index += 1;
        }
        if self.dma_index == 0xA0 {
            self.dma_active = false;
        }
    }

    fn start_dma(&mut self, src: u8) {
        self.dma_start_cycle = if self.dma_active && self.dma_index == 0 {
            self.cycles + 8
        } else {
            self.cycles + 12
        };
        self.dma_active = true;
        self.dma_reading = false;
        self.dma_source = src;
        self.dma_index = 0;
    }

    // ----------------------------------------------------------------------------------------
    // Bus

    #[inline]
    fn vram_read_blocked(&self) -> bool {
        let l = &self.lcd;
        l.enabled()
            && (l.stat.mode == 3
                || (l.stat.mode == 2 && l.clock <= l.clock_target && l.clock_target - l.clock <= 4))
    }

    #[inline(always)]
    pub fn read(&mut self, addr: u16) -> u8 {
        // WRAM and HRAM have no side effects: the common case, kept inline.
        if (0xC000..0xE000).contains(&addr) {
            return self.wram[(addr - 0xC000) as usize];
        }
        if (0xFF80..0xFFFF).contains(&addr) && !self.dma_active {
            return self.hram[(addr - 0xFF80) as usize];
        }
        self.read_slow(addr)
    }

    #[inline(never)]
    #[cold]
    pub(crate) fn read_slow(&mut self, addr: u16) -> u8 {
        match addr {
            0x0000..=0x3FFF => {
                if self.bootrom_enabled && addr <= 0xFF {
                    self.boot_rom[addr as usize]
                } else {
                    self.cart.read_rom(addr)
                }
            }
            0x4000..=0x7FFF => self.cart.read_rom(addr),
            0x8000..=0x9FFF => {
                if self.mao != 0 {
                    self.lcd_tick(self.cycles + self.mao);
                    if self.vram_read_blocked() {
                        return 0xFF;
                    }
                }
                self.lcd.vram[(addr - 0x8000) as usize]
            }
            0xA000..=0xBFFF => self.cart.read_ram(addr),
            0xC000..=0xDFFF => self.wram[(addr - 0xC000) as usize],
            0xE000..=0xFDFF => self.read(addr - 0x2000),
            0xFE00..=0xFE9F => self.read_oam(addr),
            0xFEA0..=0xFEFF => self.unusable[(addr - 0xFEA0) as usize],
            _ => self.read_io(addr),
        }
    }

    fn read_oam(&mut self, addr: u16) -> u8 {
        if self.mao != 0 && !self.dma_reading {
            self.lcd_tick(self.cycles + self.mao);
            let l = &self.lcd;
            let startup_delay = l.first_frame && l.stat_transition == 2;
            if l.enabled() && (l.stat.mode == 2 || l.stat.mode == 3 || startup_delay) {
                return 0xFF;
            }
        }
        if self.dma_active && !self.dma_reading {
            self.sync_oam_dma(self.mao);
        }
        let mao = self.mao;
        let mut started = self.cycles + mao >= self.dma_start_cycle;
        if self.dma_active && !self.dma_reading && started && self.hl == addr {
            self.sync_oam_dma(mao.max(4));
            started = self.cycles + mao >= self.dma_start_cycle;
        }
        if self.dma_active && started && !self.dma_reading {
            return 0xFF;
        }
        self.lcd.oam[(addr - 0xFE00) as usize]
    }

    fn read_io(&mut self, addr: u16) -> u8 {
        if self.dma_active && !self.dma_reading {
            self.sync_oam_dma(self.mao);
        }
        match addr {
            0xFF00 => self.io[0],
            0xFF01 => {
                self.serial_tick();
                self.serial.sb
            }
            0xFF02 => {
                self.serial_tick();
                self.serial.sc
            }
            0xFF03 | 0xFF08..=0xFF0E => 0xFF,
            0xFF04..=0xFF07 => {
                self.timer_tick();
                match addr {
                    0xFF04 => self.timer.div,
                    0xFF05 => self.timer.read_tima(),
                    0xFF06 => self.timer.tma,
                    _ => self.timer.tac | 0b1111_1000,
                }
            }
            0xFF0F => self.if_reg | 0b1110_0000,
            // PyBoy with sound emulation off reads every sound register as 0.
            0xFF10..=0xFF3F => 0,
            0xFF40..=0xFF4B => {
                self.lcd_tick(self.cycles + self.mao);
                let l = &mut self.lcd;
                match addr {
                    0xFF40 => l.lcdc,
                    0xFF41 => {
                        let mut v = l.stat.value;
                        if l.stat_mode_override {
                            l.stat_mode_override = false;
                            v &= 0b1111_1100;
                        }
                        v
                    }
                    0xFF42 => l.scy,
                    0xFF43 => l.scx,
                    0xFF44 => l.ly,
                    0xFF45 => l.lyc,
                    0xFF46 => self.dma_source,
                    0xFF47 => l.bgp,
                    0xFF48 => l.obp0,
                    0xFF49 => l.obp1,
                    0xFF4A => l.wy,
                    _ => l.wx,
                }
            }
            0xFF4C..=0xFF7F => 0xFF,
            0xFF80..=0xFFFE => self.hram[(addr - 0xFF80) as usize],
            0xFFFF => self.ie_reg,
            _ => self.io[(addr - 0xFF00) as usize],
        }
    }

    #[inline(always)]
    pub fn write(&mut self, addr: u16, value: u8) {
        if (0xC000..0xE000).contains(&addr) {
            self.wram[(addr - 0xC000) as usize] = value;
            return;
        }
        if (0xFF80..0xFFFF).contains(&addr) && !self.dma_active {
            self.hram[(addr - 0xFF80) as usize] = value;
            return;
        }
        self.write_slow(addr, value);
    }

    #[inline(never)]
    #[cold]
    pub(crate) fn write_slow(&mut self, addr: u16, value: u8) {
        match addr {
            0x0000..=0x7FFF => {
                self.cart.write(addr, value);
                self.refresh_fetch();
                self.bail = true;
            }
            0x8000..=0x9FFF => {
                if self.mao != 0 {
                    self.lcd_tick(self.cycles + self.mao);
                    if self.lcd.enabled() && self.lcd.stat.mode == 3 {
                        return;
                    }
                }
                self.lcd.vram[(addr - 0x8000) as usize] = value;
            }
            0xA000..=0xBFFF => self.cart.write(addr, value),
            0xC000..=0xDFFF => self.wram[(addr - 0xC000) as usize] = value,
            0xE000..=0xFDFF => self.write(addr - 0x2000, value),
            0xFE00..=0xFE9F => {
                if self.mao != 0 {
                    self.lcd_tick(self.cycles + self.mao);
                    let l = &self.lcd;
                    let open =
                        l.first_frame && l.clock <= l.clock_target && l.clock_target - l.clock <= 4;
                    if l.enabled() && (l.stat.mode == 3 || (l.stat.mode == 2 && !open)) {
                        return;
                    }
                }
                if self.dma_active && !self.dma_reading {
                    self.sync_oam_dma(self.mao);
                }
                if !self.dma_active {
                    self.lcd.oam[(addr - 0xFE00) as usize] = value;
                }
            }
            0xFEA0..=0xFEFF => self.unusable[(addr - 0xFEA0) as usize] = value,
            _ => self.write_io(addr, value),
        }
    }

    fn write_io(&mut self, addr: u16, value: u8) {
        if self.dma_active && !self.dma_reading {
            self.sync_oam_dma(self.mao);
        }
        match addr {
            0xFF00..=0xFF4B => {
                match addr {
                    0xFF00 => self.io[0] = self.joypad_pull(value),
                    0xFF01 | 0xFF02 => {
                        self.serial_tick();
                        if addr == 0xFF01 {
                            self.serial.sb = 0xFF; // no link cable
                        } else {
                            self.serial.set_sc(value);
                        }
                    }
                    0xFF04..=0xFF07 => {
                        self.timer_tick();
                        match addr {
                            0xFF04 => self.timer.reset(),
                            0xFF05 => self.timer.write_tima(value),
                            0xFF06 => self.timer.write_tma(value),
                            _ => self.timer.write_tac(value),
                        }
                    }
                    0xFF0F => self.if_reg = value & 0x1F,
                    0xFF10..=0xFF3F => {} // sound registers: not emulated, read back 0
                    0xFF40..=0xFF4B => {
                        self.lcd_tick(self.cycles);
                        match addr {
                            0xFF40 => {
                                let f = self.lcd.set_lcdc(value);
                                self.if_reg |= f;
                            }
                            0xFF41 => {
                                let f = self.lcd.stat.set(value);
                                self.if_reg |= f;
                            }
                            0xFF42 => self.lcd.scy = value,
                            0xFF43 => self.lcd.scx = value,
                            0xFF44 => return, // read-only, and no bail
                            0xFF45 => {
                                self.lcd.lyc = value;
                                if self.lcd.enabled() {
                                    let (lyc, ly) = (self.lcd.lyc, self.lcd.ly);
                                    let f = self.lcd.stat.update_lyc(lyc, ly);
                                    self.if_reg |= f;
                                } else {
                                    self.lcd.lyc_changed_while_disabled = true;
                                }
                            }
                            0xFF46 => self.start_dma(value),
                            0xFF47 => self.lcd.bgp = value,
                            0xFF48 => self.lcd.obp0 = value,
                            0xFF49 => self.lcd.obp1 = value,
                            0xFF4A => self.lcd.wy = value,
                            _ => self.lcd.wx = value,
                        }
                    }
                    _ => self.io[(addr - 0xFF00) as usize] = value,
                }
                self.bail = true;
            }
            0xFF4C..=0xFF7F => {
                if self.bootrom_enabled && addr == 0xFF50 && (value == 0x01 || value == 0x11) {
                    self.bootrom_enabled = false;
                    self.refresh_fetch();
                    self.bail = true;
                }
            }
            0xFF80..=0xFFFE => self.hram[(addr - 0xFF80) as usize] = value,
            _ => {
                self.ie_reg = value;
                self.bail = true;
            }
        }
    }

    // ----------------------------------------------------------------------------------------
    // Joypad

    /// P1 is computed when written (PyBoy does not refresh it on a key change).
    fn joypad_pull(&self, value: u8) -> u8 {
        let p14 = (value >> 4) & 1;
        let p15 = (value >> 5) & 1;
        let mut v = value | 0b1100_1111;
        if p14 == 1 && p15 == 1 {
            v = 0x0F;
        } else if p14 == 0 && p15 == 0 {
        } else if p14 == 0 {
            v &= self.joy_directional;
        } else {
            v &= self.joy_standard;
        }
        v | 0b1100_0000
    }

    /// Presses (`pressed`) or releases one button (index into `BUTTON_NAMES`); a press of a
    /// released button raises the joypad interrupt.
    pub fn set_button(&mut self, index: usize, pressed: bool) {
        let (group, bit) = if index < 4 {
            (&mut self.joy_directional, index)
        } else {
            (&mut self.joy_standard, index - 4)
        };
        let before = *group;
        if pressed {
            *group &= !(1 << bit);
        } else {
            *group |= 1 << bit;
        }
        if (before ^ *group) & before != 0 {
            self.if_reg |= INTR_JOYPAD;
        }
    }

    /// Sets all eight buttons from a bit mask (bit i = `BUTTON_NAMES[i]` held).
    pub fn set_buttons(&mut self, mask: u8) {
        for i in 0..8 {
            let held = mask & (1 << i) != 0;
            let is_held = self.button_held(i);
            if held != is_held {
                self.set_button(i, held);
            }
        }
    }

    pub fn button_held(&self, index: usize) -> bool {
        if index < 4 {
            self.joy_directional & (1 << index) == 0
        } else {
            self.joy_standard & (1 << (index - 4)) == 0
        }
    }

    // ----------------------------------------------------------------------------------------
    // Frame loop

    /// One frame, as one `PyBoy.tick(1, render)`: runs until the PPU reports the frame's end.
    /// Returns false when emulation stalled (see `Stall`).
    pub fn run_frame(&mut self, render: bool) -> bool {
        if self.stall.is_some() {
            return false;
        }
        self.render = render;
        self.lcd.frame_done = false;
        self.caught_up_at = self.cycles; // nothing is deferred between frames
        while !self.lcd.frame_done {
            let caught_up = self.cpu_tick(self.budget());
            if self.stall.is_some() {
                self.settle();
                return false;
            }
            if !caught_up {
                self.catch_up();
            }
        }
        self.settle();
        self.frame_count += 1;
        true
    }

    /// Cycles the CPU may run before the next scheduled event (PyBoy's batch length).
    #[inline(always)]
    pub(crate) fn budget(&self) -> i64 {
        4.max(
            self.timer
                .cycles_to_interrupt
                .min(self.lcd.cycles_to_interrupt)
                .min(self.lcd.cycles_to_frame)
                .min(MAX_CYCLES)
                .min(self.serial.cycles_to_interrupt),
        )
    }

    /// What follows every CPU batch: OAM DMA, serial, timer and PPU brought to `self.cycles`.
    /// A serial port or timer with nothing under way only counts cycles (its tick adds the
    /// cycles since its last tick to its counters, and schedules nothing), so several of its
    /// ticks make the same state as one at the end: those are left to `settle` (at the frame's
    /// end, at a stall) or to the next access of their registers, which ticks them first.
    #[inline(always)]
    pub(crate) fn catch_up(&mut self) {
        if self.dma_active && !self.dma_reading {
            self.mao = 0;
            self.sync_oam_dma(0);
        }
        if self.serial.transfer_enabled || self.serial.cycles_to_interrupt != MAX_CYCLES {
            self.serial_tick();
        }
        if !self.timer.idle() {
            self.timer_tick();
        }
        let ticked = self.lcd.tick_inline(self.cycles);
        self.lcd_event(ticked);
        self.caught_up_at = self.cycles;
    }

    /// The serial port and timer brought to the last catch-up (see `catch_up`), where the
    /// batch loop of PyBoy leaves them.
    fn settle(&mut self) {
        let at = self.caught_up_at;
        // A register access after it may have brought them further already.
        if at > self.serial.last_cycles && self.serial.tick(at) {
            self.if_reg |= INTR_SERIAL;
        }
        if at > self.timer.last_cycles && self.timer.tick(at) {
            self.if_reg |= INTR_TIMER;
        }
    }

    /// `n` frames; only the last is rendered when `render` (PyBoy's `tick(n, render)`).
    pub fn tick(&mut self, n: u64, render: bool) -> bool {
        for i in 0..n {
            if !self.run_frame(render && i + 1 == n) {
                return false;
            }
        }
        true
    }

    /// A frame's worth of T-cycles, for reference by callers.
    pub const FRAME_CYCLES: u64 = FRAME_CYCLES;
}
