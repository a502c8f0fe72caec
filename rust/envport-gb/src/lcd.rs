//! The PPU's timing (DMG only): LY, STAT modes and the STAT/VBlank interrupt lines, advanced
//! lazily one transition per call as PyBoy 2.8.1 advances it, so that the CPU sees the same
//! register values at the same cycle. The scanline renderer lives in `render.rs`.

pub const FRAME_CYCLES: u64 = 70224;
pub const INTR_VBLANK: u8 = 1;
pub const INTR_LCDC: u8 = 2;

const TRANSITION_NONE: u8 = 0;
const TRANSITION_ADVANCE_LY: u8 = 1;
const TRANSITION_START_MODE2: u8 = 2;

#[derive(Clone)]
pub struct Stat {
    pub value: u8,
    pub mode: u8,
    pub irq_line: bool,
}

impl Stat {
    pub fn set(&mut self, value: u8) -> u8 {
        self.value &= 0b1000_0111;
        self.value |= value & 0b0111_1000;
        self.update_irq_line()
    }

    #[inline(always)]
    pub fn update_lyc(&mut self, lyc: u8, ly: u8) -> u8 {
        if lyc == ly {
            self.value |= 0b100;
        } else {
            self.value &= 0b1111_1011;
        }
        self.update_irq_line()
    }

    #[inline(always)]
    pub fn set_mode(&mut self, mode: u8) -> u8 {
        if self.mode == mode {
            return 0;
        }
        self.mode = mode;
        self.value &= 0b1111_1100;
        self.value |= mode;
        self.update_irq_line()
    }

    /// The STAT interrupt fires on a rising edge of the OR of its enabled sources.
    #[inline(always)]
    pub fn update_irq_line(&mut self) -> u8 {
        let mode_irq = self.mode != 3 && self.value & (1 << (self.mode + 3)) != 0;
        let lyc_irq = self.value & 0x44 == 0x44;
        let line = mode_irq || lyc_irq;
        let fire = line && !self.irq_line;
        self.irq_line = line;
        if fire {
            INTR_LCDC
        } else {
            0
        }
    }
}

#[derive(Clone)]
pub struct Lcd {
    pub vram: Vec<u8>,
    pub oam: Vec<u8>,
    pub lcdc: u8,
    pub stat: Stat,
    pub bgp: u8,
    pub obp0: u8,
    pub obp1: u8,
    pub scy: u8,
    pub scx: u8,
    pub ly: u8,
    pub lyc: u8,
    pub wy: u8,
    pub wx: u8,
    pub clock: u64,
    pub clock_target: u64,
    pub frame_done: bool,
    pub first_frame: bool,
    pub reset: bool,
    pub stat_mode_override: bool,
    pub lyc_changed_while_disabled: bool,
    pub cycles_to_interrupt: i64,
    pub cycles_to_frame: i64,
    pub next_stat_mode: u8,
    pub stat_transition: u8,
    pub mode3_adjustment: i16,
    pub last_cycles: u64,
    pub wy_activated_frame: bool,
    /// PyBoy's record of each line's SCX, SCY, WX, WY and LCDC's tile-data bit (0 or 0x10),
    /// taken when the line's mode 3 ends (for its API; no effect on emulation): kept so that
    /// a state exported in PyBoy's format is the one PyBoy itself would save.
    pub scanline_params: [[u8; 5]; 144],
}

/// What a call to `Lcd::tick` asks of the rest of the machine besides interrupts.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum LineEvent {
    None,
    /// Mode 3 ended on this line: draw it from the registers now.
    DrawLine(u8),
    /// The screen goes blank (LCD off, or the first frame after switching it on).
    Blank,
}

impl Default for Lcd {
    fn default() -> Self {
        Lcd {
            vram: vec![0; 0x2000],
            oam: vec![0; 0xA0],
            lcdc: 0,
            stat: Stat {
                value: 0x80,
                mode: 0,
                irq_line: false,
            },
            bgp: 0xFC,
            obp0: 0xFF,
            obp1: 0xFF,
            scy: 0,
            scx: 0,
            ly: 0,
            lyc: 0,
            wy: 0,
            wx: 0,
            clock: 0,
            clock_target: FRAME_CYCLES,
            frame_done: false,
            first_frame: false,
            reset: false,
            stat_mode_override: false,
            lyc_changed_while_disabled: false,
            cycles_to_interrupt: 0,
            cycles_to_frame: FRAME_CYCLES as i64,
            next_stat_mode: 2,
            stat_transition: TRANSITION_NONE,
            mode3_adjustment: 0,
            last_cycles: 0,
            wy_activated_frame: false,
            scanline_params: [[0; 5]; 144],
        }
    }
}

impl Lcd {
    #[inline]
    pub fn enabled(&self) -> bool {
        self.lcdc & 0x80 != 0
    }

    pub fn set_lcdc(&mut self, value: u8) -> u8 {
        let was_on = self.enabled();
        self.lcdc = value;
        if was_on && !self.enabled() {
            self.clock = 0;
            self.clock_target = 0;
            self.cycles_to_frame = 0;
            self.stat.set_mode(0); // no interrupt from this change
            self.ly = 0;
        } else if !was_on && self.enabled() {
            self.clock_target = 0;
            self.first_frame = true;
            self.reset = true;
            if self.lyc_changed_while_disabled {
                self.stat_mode_override = true;
                self.lyc_changed_while_disabled = false;
            }
            if self.stat.value & 0x40 != 0 {
                return self.stat.update_lyc(self.lyc, self.ly);
            }
        }
        0
    }

    /// Extra dots of mode 3 for the objects on line `ly` (and the fine scroll).
    fn mode3_sprite_penalty(&self, ly: u8) -> i16 {
        if self.lcdc & 0x02 == 0 {
            return 0;
        }
        let height: i32 = if self.lcdc & 0x04 != 0 { 16 } else { 8 };
        let ly = ly as i32;
        let mut count = 0;
        let mut groups = 0;
        let mut penalty: i32 = 0;
        let mut seen = [0u64; 3];
        for index in (0..0xA0).step_by(4) {
            let y = self.oam[index] as i32 - 16;
            if y <= ly && ly < y + height {
                let x = self.oam[index + 1] as i32;
                if x < 168 {
                    penalty += 6;
                    let (word, bit) = ((x / 64) as usize, x % 64);
                    let duplicate = seen[word] & (1u64 << bit) != 0;
                    seen[word] |= 1u64 << bit;
                    if !duplicate {
                        groups += 1;
                        let alignment = 5 - ((x + self.scx as i32 - 8) & 7);
                        if alignment > 0 {
                            penalty += alignment;
                        }
                    }
                }
                count += 1;
                if count == 10 {
                    break;
                }
            }
        }
        if count > 0 && groups == 0 {
            return -4;
        }
        if count == 0 {
            return 0;
        }
        (penalty - 7).max(0) as i16
    }

    pub fn mode3_timing_adjustment(&self, ly: u8) -> i16 {
        let mut p = self.mode3_sprite_penalty(ly);
        if !self.first_frame {
            p += (((self.scx & 7) as i16) + 3) / 4 * 4;
        }
        p
    }

    /// Brings the PPU to CPU time `now`: at most one mode transition per call. Returns the
    /// interrupt flags raised and what the renderer should do. Out of line for the bus; the
    /// catch-up after each batch inlines `tick_inline`.
    #[inline(never)]
    pub fn tick(&mut self, now: u64) -> (u8, LineEvent) {
        self.tick_inline(now)
    }

    /// `tick`, inlined into its caller.
    #[inline(always)]
    pub fn tick_inline(&mut self, now: u64) -> (u8, LineEvent) {
        let cycles = now.wrapping_sub(self.last_cycles);
        if cycles == 0 {
            return (0, LineEvent::None);
        }
        self.last_cycles = now;
        let mut flags = 0u8;
        let mut event = LineEvent::None;
        self.clock = self.clock.wrapping_add(cycles);
        let on = self.enabled();

        if self.clock >= self.clock_target {
            if on && self.reset {
                self.reset = false;
                self.frame_done = true;
                self.ly = 0;
                self.clock = 0;
                // Switching the LCD on starts in mode 0 and skips the first mode 2.
                self.clock_target = 76;
                self.next_stat_mode = 3;
                self.stat_transition = TRANSITION_NONE;
                flags |= self.stat.set_mode(0);
                self.wy_activated_frame = self.wy == self.ly;
                flags |= self.stat.update_lyc(self.lyc, self.ly);
            } else if on && self.ly == 153 {
                if self.first_frame && self.clock_target < FRAME_CYCLES {
                    self.clock_target = FRAME_CYCLES;
                } else {
                    self.frame_done = true;
                    self.ly = 0;
                    self.clock %= FRAME_CYCLES;
                    self.first_frame = false;
                    self.clock_target = self.clock_target % FRAME_CYCLES + 80;
                    self.next_stat_mode = 3;
                    self.stat_transition = TRANSITION_NONE;
                    flags |= self.stat.set_mode(2);
                    self.wy_activated_frame = self.wy == self.ly;
                    flags |= self.stat.update_lyc(self.lyc, self.ly);
                }
            } else if on && self.stat_transition == TRANSITION_ADVANCE_LY {
                self.ly += 1;
                if self.first_frame {
                    self.stat.value &= 0xFB;
                    flags |= self.stat.update_irq_line();
                } else {
                    flags |= self.stat.update_lyc(self.lyc, self.ly);
                }
                self.clock_target += 4;
                self.stat_transition = TRANSITION_START_MODE2;
            } else if on && self.stat_transition == TRANSITION_START_MODE2 {
                flags |= self.stat.set_mode(2);
                if self.first_frame {
                    flags |= self.stat.update_lyc(self.lyc, self.ly);
                }
                self.clock_target += 80;
                self.next_stat_mode = 3;
                self.stat_transition = TRANSITION_NONE;
                self.wy_activated_frame |= self.wy == self.ly;
            } else if on {
                flags |= self.stat.set_mode(self.next_stat_mode);
                match self.stat.mode {
                    2 => {
                        self.ly += 1;
                        self.clock_target += 80;
                        self.next_stat_mode = 3;
                        self.stat_transition = TRANSITION_NONE;
                        flags |= self.stat.update_lyc(self.lyc, self.ly);
                        self.wy_activated_frame |= self.wy == self.ly;
                    }
                    3 => {
                        self.mode3_adjustment = self.mode3_timing_adjustment(self.ly);
                        self.clock_target = self
                            .clock_target
                            .wrapping_add((172 + self.mode3_adjustment) as u64);
                        self.next_stat_mode = 0;
                        self.stat_transition = TRANSITION_NONE;
                    }
                    0 => {
                        let base: i16 = if self.first_frame || self.ly < 143 {
                            200
                        } else {
                            204
                        };
                        self.clock_target = self
                            .clock_target
                            .wrapping_add((base - self.mode3_adjustment) as u64);
                        if self.ly < 143 {
                            self.next_stat_mode = 2;
                            self.stat_transition = TRANSITION_ADVANCE_LY;
                        } else {
                            self.next_stat_mode = 1;
                            self.stat_transition = TRANSITION_NONE;
                        }
                        if let Some(p) = self.scanline_params.get_mut(self.ly as usize) {
                            *p = [self.scx, self.scy, self.wx, self.wy, self.lcdc & 0x10];
                        }
                        event = LineEvent::DrawLine(self.ly);
                    }
                    _ => {
                        self.clock_target += 456;
                        self.next_stat_mode = 1;
                        self.stat_transition = TRANSITION_NONE;
                        self.ly += 1;
                        flags |= self.stat.update_lyc(self.lyc, self.ly);
                        if self.ly == 144 {
                            if self.stat.value & 0x20 != 0 && !self.stat.irq_line {
                                flags |= INTR_LCDC;
                            }
                            flags |= INTR_VBLANK;
                            self.wy_activated_frame = false;
                            if self.first_frame {
                                event = LineEvent::Blank;
                            }
                        }
                    }
                }
            } else {
                self.frame_done = true;
                self.clock %= FRAME_CYCLES;
                self.clock_target = FRAME_CYCLES;
                event = LineEvent::Blank;
            }
        }
        self.cycles_to_interrupt = self.clock_target.wrapping_sub(self.clock) as i64;
        self.cycles_to_frame = FRAME_CYCLES.wrapping_sub(self.clock) as i64;
        (flags, event)
    }
}
