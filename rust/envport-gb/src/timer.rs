//! DIV/TIMA/TMA/TAC, brought up to date lazily (on register access and after each CPU batch),
//! with the overflow/reload timing PyBoy 2.8.1 shows: after an overflow TIMA reads 0 for four
//! cycles, then holds TMA, and the interrupt is raised when the first four cycles end.

pub const MAX_CYCLES: i64 = 1 << 31;
const DIVIDER_BITS: [u32; 4] = [10, 4, 6, 8];

#[derive(Clone, Default)]
pub struct Timer {
    pub div: u8,
    pub tima: u64,
    pub div_counter: u64,
    pub tima_counter: u64,
    pub tma: u8,
    pub tac: u8,
    pub tima_reload_state: u8,
    pub cycles_to_interrupt: i64,
    pub last_cycles: u64,
}

impl Timer {
    #[inline]
    fn timer_bit(&self) -> u64 {
        1 << (DIVIDER_BITS[(self.tac & 3) as usize] - 1)
    }

    fn increase_tima(&mut self) {
        self.tima += 1;
        if self.tima > 0xFF {
            self.tima = self.tma as u64;
            self.tima_reload_state = 1;
            self.tima_counter = 4;
        }
    }

    /// A write to DIV: a falling edge of the selected bit counts once.
    pub fn reset(&mut self) {
        if self.tac & 0b100 != 0 && self.div_counter & self.timer_bit() != 0 {
            self.increase_tima();
        }
        self.div_counter = 0;
        self.div = 0;
    }

    pub fn write_tima(&mut self, value: u8) {
        if self.tima_reload_state != 2 {
            self.tima = value as u64;
        }
    }

    pub fn write_tma(&mut self, value: u8) {
        self.tma = value;
        if self.tima_reload_state != 0 {
            self.tima = value as u64;
        }
    }

    pub fn write_tac(&mut self, value: u8) {
        let old_bit = self.timer_bit();
        let new_bit: u64 = 1 << (DIVIDER_BITS[(value & 3) as usize] - 1);
        if self.tac & 0b100 != 0
            && self.div_counter & old_bit != 0
            && (value & 0b100 == 0 || self.div_counter & new_bit == 0)
        {
            self.increase_tima();
        }
        self.tac = value & 0b111;
    }

    pub fn read_tima(&self) -> u8 {
        if self.tima_reload_state == 1 {
            0
        } else {
            self.tima as u8
        }
    }

    fn schedule(&mut self) {
        if self.tac & 0b100 != 0 {
            let period = self.timer_bit() * 2;
            let next_edge = ((self.div_counter & !(period - 1)) + period) - self.div_counter;
            self.cycles_to_interrupt = next_edge as i64 + (0xFF - self.tima as i64) * period as i64;
        } else {
            self.cycles_to_interrupt = MAX_CYCLES;
        }
    }

    /// Off, with no reload under way and nothing scheduled: a tick only adds to DIV's counter.
    #[inline(always)]
    pub fn idle(&self) -> bool {
        self.tima_reload_state == 0
            && self.tac & 0b100 == 0
            && self.cycles_to_interrupt == MAX_CYCLES
    }

    /// Brings the timer to CPU time `now`; true when the timer interrupt is raised.
    pub fn tick(&mut self, now: u64) -> bool {
        let mut cycles = now.wrapping_sub(self.last_cycles);
        if cycles == 0 {
            return false;
        }
        self.last_cycles = now;
        if self.tima_reload_state == 0 && self.tac & 0b100 == 0 {
            // Timer off: only DIV counts.
            self.div_counter = (self.div_counter + cycles) & 0xFFFF;
            self.div = (self.div_counter >> 8) as u8;
            self.cycles_to_interrupt = MAX_CYCLES;
            return false;
        }
        let timer_bit = self.timer_bit();

        if self.tima_reload_state == 0 {
            if self.tac & 0b100 != 0 {
                // No reload under way: count the falling edges of the selected bit in one go,
                // unless TIMA overflows within this stretch.
                let period = timer_bit * 2;
                let mask = period - 1;
                let start = self.div_counter;
                let end = start.wrapping_add(cycles);
                let edges = (end.wrapping_sub(1).wrapping_sub(mask).wrapping_add(period)) / period
                    - (start
                        .wrapping_sub(1)
                        .wrapping_sub(mask)
                        .wrapping_add(period))
                        / period;
                if self.tima + edges <= 0xFF {
                    self.tima += edges;
                    self.div_counter = end & 0xFFFF;
                    self.div = (self.div_counter >> 8) as u8;
                    self.schedule();
                    return false;
                }
            } else {
                self.div_counter = (self.div_counter + cycles) & 0xFFFF;
                self.div = (self.div_counter >> 8) as u8;
                self.cycles_to_interrupt = MAX_CYCLES;
                return false;
            }
        }

        // A reload is under way or TIMA overflows: one cycle at a time.
        let mut raised = false;
        while cycles > 0 {
            if self.tima_reload_state != 0 {
                self.tima_counter = self.tima_counter.wrapping_sub(1);
                if self.tima_counter == 0 {
                    if self.tima_reload_state == 1 {
                        self.tima_reload_state = 2;
                        self.tima_counter = 4;
                        raised = true;
                    } else {
                        self.tima_reload_state = 0;
                    }
                }
            }
            let counter = self.div_counter;
            let new_counter = (counter + 1) & 0xFFFF;
            if self.tac & 0b100 != 0 && counter & timer_bit != 0 && new_counter & timer_bit == 0 {
                self.increase_tima();
            }
            self.div_counter = new_counter;
            self.div = (new_counter >> 8) as u8;
            cycles -= 1;
        }
        self.schedule();
        if self.tac & 0b100 != 0 && self.tima_reload_state == 1 {
            self.cycles_to_interrupt = self.cycles_to_interrupt.min(self.tima_counter as i64);
        }
        raised
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn div_counts_every_256_cycles() {
        let mut t = Timer::default();
        t.tick(255);
        assert_eq!(t.div, 0);
        t.tick(256);
        assert_eq!(t.div, 1);
        t.tick(256 * 300);
        assert_eq!(t.div, (300 % 256) as u8);
    }

    #[test]
    fn tima_rates_follow_tac() {
        for (tac, period) in [(4u8, 1024u64), (5, 16), (6, 64), (7, 256)] {
            let mut t = Timer::default();
            t.write_tac(tac);
            t.tick(period * 10 - 1);
            assert_eq!(t.read_tima(), 9, "TAC {tac}");
            t.tick(period * 10);
            assert_eq!(t.read_tima(), 10, "TAC {tac}");
        }
    }

    #[test]
    fn overflow_reads_zero_then_reloads_and_raises_once() {
        let mut t = Timer::default();
        t.write_tac(5); // 16 cycles per count
        t.write_tma(0xAB);
        t.write_tima(0xFF);
        assert!(!t.tick(15));
        // The 16th cycle is the falling edge: TIMA overflows, reads 0 for 4 cycles.
        assert!(!t.tick(16));
        assert_eq!(t.read_tima(), 0);
        assert!(!t.tick(19));
        assert!(t.tick(20));
        assert_eq!(t.read_tima(), 0xAB);
        assert!(!t.tick(40));
        assert_eq!(t.tima_reload_state, 0);
    }

    #[test]
    fn div_write_on_a_set_bit_counts_once() {
        let mut t = Timer::default();
        t.write_tac(5);
        t.tick(8); // bit 3 set
        t.reset();
        assert_eq!(t.read_tima(), 1);
        assert_eq!(t.div_counter, 0);
    }
}
