//! Save and load of the core's own state (a versioned little-endian byte string; the ROM and
//! boot ROM are not included: a state loads into a machine made from the same ROM).

use crate::gb::{GameBoy, Stall};

const MAGIC: &[u8; 8] = b"ENVPGB01";

struct W(Vec<u8>);

impl W {
    fn u8(&mut self, v: u8) {
        self.0.push(v);
    }
    fn b(&mut self, v: bool) {
        self.0.push(v as u8);
    }
    fn u16(&mut self, v: u16) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn u64(&mut self, v: u64) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn i64(&mut self, v: i64) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn bytes(&mut self, v: &[u8]) {
        self.u64(v.len() as u64);
        self.0.extend_from_slice(v);
    }
}

struct R<'a>(&'a [u8], usize);

impl R<'_> {
    fn take(&mut self, n: usize) -> Result<&[u8], String> {
        if self.1 + n > self.0.len() {
            return Err("state is truncated".into());
        }
        let s = &self.0[self.1..self.1 + n];
        self.1 += n;
        Ok(s)
    }
    fn u8(&mut self) -> Result<u8, String> {
        Ok(self.take(1)?[0])
    }
    fn b(&mut self) -> Result<bool, String> {
        Ok(self.u8()? != 0)
    }
    fn u16(&mut self) -> Result<u16, String> {
        Ok(u16::from_le_bytes(self.take(2)?.try_into().unwrap()))
    }
    fn u64(&mut self) -> Result<u64, String> {
        Ok(u64::from_le_bytes(self.take(8)?.try_into().unwrap()))
    }
    fn i64(&mut self) -> Result<i64, String> {
        Ok(i64::from_le_bytes(self.take(8)?.try_into().unwrap()))
    }
    fn bytes_into(&mut self, dst: &mut [u8]) -> Result<(), String> {
        let n = self.u64()? as usize;
        if n != dst.len() {
            return Err(format!(
                "state block of {n} bytes where {} were expected",
                dst.len()
            ));
        }
        dst.copy_from_slice(self.take(n)?);
        Ok(())
    }
}

impl GameBoy {
    pub fn save_state(&self) -> Vec<u8> {
        let mut w = W(Vec::with_capacity(64 * 1024));
        w.0.extend_from_slice(MAGIC);
        for v in [self.a, self.f, self.b, self.c, self.d, self.e] {
            w.u8(v);
        }
        w.u16(self.hl);
        w.u16(self.sp);
        w.u16(self.pc);
        for v in [
            self.ime,
            self.halted,
            self.halted_during_ei,
            self.stopped,
            self.interrupt_queued,
        ] {
            w.b(v);
        }
        w.u8(self.ei_delay);
        w.u8(self.if_reg);
        w.u8(self.ie_reg);
        w.u64(self.cycles);
        match self.stall {
            None => w.u8(0),
            Some(Stall::UnusedOpcode { opcode, pc }) => {
                w.u8(1);
                w.u8(opcode);
                w.u16(pc);
            }
        }
        // Cartridge registers and RAM
        let c = &self.cart;
        for v in [
            c.rombank_selected as u64,
            c.rombank_selected_low as u64,
            c.rambank_selected as u64,
        ] {
            w.u64(v);
        }
        w.b(c.rambank_enabled);
        w.u8(c.memorymodel);
        w.u8(c.bank_select_register1);
        w.u8(c.bank_select_register2);
        w.bytes(&c.ram);
        w.b(self.bootrom_enabled);
        w.bytes(&self.wram);
        w.bytes(&self.hram);
        w.bytes(&self.io);
        w.bytes(&self.unusable);
        w.b(self.dma_active);
        w.b(self.dma_reading);
        w.u8(self.dma_source);
        w.u8(self.dma_index);
        w.u64(self.dma_start_cycle);
        let t = &self.timer;
        w.u8(t.div);
        w.u64(t.tima);
        w.u64(t.div_counter);
        w.u64(t.tima_counter);
        w.u8(t.tma);
        w.u8(t.tac);
        w.u8(t.tima_reload_state);
        w.i64(t.cycles_to_interrupt);
        w.u64(t.last_cycles);
        let l = &self.lcd;
        w.bytes(&l.vram);
        w.bytes(&l.oam);
        for v in [
            l.lcdc,
            l.stat.value,
            l.stat.mode,
            l.bgp,
            l.obp0,
            l.obp1,
            l.scy,
            l.scx,
            l.ly,
        ] {
            w.u8(v);
        }
        for v in [l.lyc, l.wy, l.wx, l.next_stat_mode, l.stat_transition] {
            w.u8(v);
        }
        for v in [
            l.stat.irq_line,
            l.frame_done,
            l.first_frame,
            l.reset,
            l.stat_mode_override,
            l.lyc_changed_while_disabled,
            l.wy_activated_frame,
        ] {
            w.b(v);
        }
        w.u64(l.clock);
        w.u64(l.clock_target);
        w.i64(l.cycles_to_interrupt);
        w.i64(l.cycles_to_frame);
        w.u16(l.mode3_adjustment as u16);
        w.u64(l.last_cycles);
        let s = &self.serial;
        w.u8(s.sb);
        w.u8(s.sc);
        w.b(s.transfer_enabled);
        w.b(s.internal_clock);
        w.i64(s.cycles_to_interrupt);
        w.u64(s.last_cycles);
        w.u64(s.clock);
        w.u64(s.clock_target);
        w.u8(self.joy_directional);
        w.u8(self.joy_standard);
        w.bytes(&self.screen.shades);
        w.bytes(&self.screen.col0);
        w.i64(self.screen.ly_window as i64);
        w.u64(self.frame_count);
        w.0
    }

    pub fn load_state(&mut self, data: &[u8]) -> Result<(), String> {
        let mut g = self.clone();
        let mut r = R(data, 0);
        if r.take(8)? != MAGIC {
            return Err("not an envport-gb state (bad magic)".into());
        }
        g.a = r.u8()?;
        g.f = r.u8()?;
        g.b = r.u8()?;
        g.c = r.u8()?;
        g.d = r.u8()?;
        g.e = r.u8()?;
        g.hl = r.u16()?;
        g.sp = r.u16()?;
        g.pc = r.u16()?;
        g.ime = r.b()?;
        g.halted = r.b()?;
        g.halted_during_ei = r.b()?;
        g.stopped = r.b()?;
        g.interrupt_queued = r.b()?;
        g.ei_delay = r.u8()?;
        g.if_reg = r.u8()?;
        g.ie_reg = r.u8()?;
        g.cycles = r.u64()?;
        g.stall = match r.u8()? {
            0 => None,
            _ => {
                let opcode = r.u8()?;
                let pc = r.u16()?;
                Some(Stall::UnusedOpcode { opcode, pc })
            }
        };
        g.cart.rombank_selected = r.u64()? as usize;
        g.cart.rombank_selected_low = r.u64()? as usize;
        g.cart.rambank_selected = r.u64()? as usize;
        g.cart.rambank_enabled = r.b()?;
        g.cart.memorymodel = r.u8()?;
        g.cart.bank_select_register1 = r.u8()?;
        g.cart.bank_select_register2 = r.u8()?;
        r.bytes_into(&mut g.cart.ram)?;
        g.bootrom_enabled = r.b()?;
        r.bytes_into(&mut g.wram)?;
        r.bytes_into(&mut g.hram)?;
        r.bytes_into(&mut g.io)?;
        r.bytes_into(&mut g.unusable)?;
        g.dma_active = r.b()?;
        g.dma_reading = r.b()?;
        g.dma_source = r.u8()?;
        g.dma_index = r.u8()?;
        g.dma_start_cycle = r.u64()?;
        g.timer.div = r.u8()?;
        g.timer.tima = r.u64()?;
        g.timer.div_counter = r.u64()?;
        g.timer.tima_counter = r.u64()?;
        g.timer.tma = r.u8()?;
        g.timer.tac = r.u8()?;
        g.timer.tima_reload_state = r.u8()?;
        g.timer.cycles_to_interrupt = r.i64()?;
        g.timer.last_cycles = r.u64()?;
        r.bytes_into(&mut g.lcd.vram)?;
        r.bytes_into(&mut g.lcd.oam)?;
        let l = &mut g.lcd;
        l.lcdc = r.u8()?;
        l.stat.value = r.u8()?;
        l.stat.mode = r.u8()?;
        l.bgp = r.u8()?;
        l.obp0 = r.u8()?;
        l.obp1 = r.u8()?;
        l.scy = r.u8()?;
        l.scx = r.u8()?;
        l.ly = r.u8()?;
        l.lyc = r.u8()?;
        l.wy = r.u8()?;
        l.wx = r.u8()?;
        l.next_stat_mode = r.u8()?;
        l.stat_transition = r.u8()?;
        l.stat.irq_line = r.b()?;
        l.frame_done = r.b()?;
        l.first_frame = r.b()?;
        l.reset = r.b()?;
        l.stat_mode_override = r.b()?;
        l.lyc_changed_while_disabled = r.b()?;
        l.wy_activated_frame = r.b()?;
        l.clock = r.u64()?;
        l.clock_target = r.u64()?;
        l.cycles_to_interrupt = r.i64()?;
        l.cycles_to_frame = r.i64()?;
        l.mode3_adjustment = r.u16()? as i16;
        l.last_cycles = r.u64()?;
        g.serial.sb = r.u8()?;
        g.serial.sc = r.u8()?;
        g.serial.transfer_enabled = r.b()?;
        g.serial.internal_clock = r.b()?;
        g.serial.cycles_to_interrupt = r.i64()?;
        g.serial.last_cycles = r.u64()?;
        g.serial.clock = r.u64()?;
        g.serial.clock_target = r.u64()?;
        g.joy_directional = r.u8()?;
        g.joy_standard = r.u8()?;
        r.bytes_into(&mut g.screen.shades)?;
        r.bytes_into(&mut g.screen.col0)?;
        g.screen.ly_window = r.i64()? as i32;
        g.frame_count = r.u64()?;
        if r.1 != data.len() {
            return Err(format!(
                "{} trailing bytes after the state",
                data.len() - r.1
            ));
        }
        *self = g;
        self.refresh_fetch();
        Ok(())
    }
}

/// Bytes of PyBoy 2.8.1's sound block for a DMG with sound emulation off at the default sample
/// rate (48 kHz): a fixed head of 93 bytes, the audio buffer ((samples per frame + 1) * 2
/// bytes, samples per frame stored in the head) and the four channels (329 bytes). Measured on
/// PyBoy's own states (the RAM block's position), checked on every import.
const PYBOY_SOUND_CHANNELS: usize = 329;
const PYBOY_SCREEN_BYTES: usize = 144 * 160 * 5 + 1;

impl GameBoy {
    /// Loads a PyBoy 2.8.1 save state (format 29, DMG), as a freshly made PyBoy would after
    /// `load_state`: the fields PyBoy does not save keep their power-on values (the window
    /// line counter, MBC1's low-bank number, the mode-3 length outside mode 3, HALT-during-EI).
    pub fn load_pyboy_state(&mut self, data: &[u8]) -> Result<(), String> {
        let mut g =
            GameBoy::new(&self.cart.rom, Some(&self.boot_rom)).map_err(|e| e.to_string())?;
        let mut r = R(data, 0);
        let version = r.u8()?;
        if version != 29 {
            return Err(format!(
                "PyBoy state version {version}; this reader takes version 29 (PyBoy 2.8.1)"
            ));
        }
        g.bootrom_enabled = r.b()?;
        let (_key0, _key1, double_speed, cgb) = (r.u8()?, r.u8()?, r.u8()?, r.u8()?);
        if cgb != 0 || double_speed != 0 {
            return Err("the state is of a Game Boy Color; the core is DMG only".into());
        }
        for reg in [&mut g.a, &mut g.f, &mut g.b, &mut g.c, &mut g.d, &mut g.e] {
            *reg = r.u8()?;
        }
        g.hl = r.u16()?;
        g.sp = r.u16()?;
        g.pc = r.u16()?;
        g.ime = r.b()?;
        g.ei_delay = r.u8()?;
        g.halted = r.b()?;
        g.stopped = r.b()?;
        g.ie_reg = r.u8()?;
        g.interrupt_queued = r.b()?;
        g.if_reg = r.u8()?;
        g.cycles = r.u64()?;
        g.dma_active = r.b()?;
        g.dma_reading = r.b()?;
        g.dma_source = r.u8()?;
        g.dma_index = r.u8()?;
        g.dma_start_cycle = r.u64()?;
        // LCD
        g.lcd.vram.copy_from_slice(r.take(0x2000)?);
        g.lcd.oam.copy_from_slice(r.take(0xA0)?);
        let lcdc = r.u8()?;
        let _ = g.lcd.set_lcdc(lcdc); // as PyBoy's load: its side effects are overwritten below
        g.lcd.bgp = r.u8()?;
        g.lcd.obp0 = r.u8()?;
        g.lcd.obp1 = r.u8()?;
        let stat = r.u8()?;
        g.lcd.stat.value = stat;
        g.lcd.stat.mode = stat & 3;
        g.lcd.stat.irq_line = false;
        g.lcd.stat.update_irq_line();
        g.lcd.ly = r.u8()?;
        g.lcd.lyc = r.u8()?;
        g.lcd.scy = r.u8()?;
        g.lcd.scx = r.u8()?;
        g.lcd.wy = r.u8()?;
        g.lcd.wx = r.u8()?;
        let _object_priority_mode = r.u8()?;
        r.take(144 * 5)?; // PyBoy's per-line record for its API
        let (lcd_cgb, downgraded, speed_shift) = (r.u8()?, r.u8()?, r.u8()?);
        if lcd_cgb != 0 || downgraded != 0 || speed_shift != 0 {
            return Err("the state's LCD is in a Game Boy Color mode".into());
        }
        g.lcd.frame_done = r.b()?;
        g.lcd.first_frame = r.b()?;
        g.lcd.reset = r.b()?;
        g.lcd.last_cycles = r.u64()?;
        g.lcd.clock = r.u64()?;
        g.lcd.clock_target = r.u64()?;
        g.lcd.cycles_to_interrupt = g.lcd.clock_target.wrapping_sub(g.lcd.clock) as i64;
        g.lcd.cycles_to_frame = crate::lcd::FRAME_CYCLES.wrapping_sub(g.lcd.clock) as i64;
        g.lcd.next_stat_mode = r.u8()?;
        g.lcd.stat_transition = r.u8()?;
        if g.lcd.stat.mode == 3 {
            g.lcd.mode3_adjustment = g.lcd.mode3_timing_adjustment(g.lcd.ly);
        }
        // Sound: skipped, its size checked.
        let head = r.take(16)?;
        let samples_per_frame = u64::from_le_bytes(head[8..16].try_into().unwrap()) as usize;
        let rest = 93 - 16 + (samples_per_frame + 1) * 2 + PYBOY_SOUND_CHANNELS;
        r.take(rest)?;
        // Renderer: RGBA words and attribute bytes per pixel, then WY's latch.
        let screen = r.take(PYBOY_SCREEN_BYTES)?;
        for i in 0..144 * 160 {
            let px = &screen[5 * i..5 * i + 5];
            g.screen.shades[i] = match px[0] {
                _ if px[..4] == [0, 0, 0, 0] => crate::render::UNDRAWN,
                0xFF => 0,
                0x99 => 1,
                0x55 => 2,
                _ => 3,
            };
            g.screen.col0[i] = px[4] & 1;
        }
        g.lcd.wy_activated_frame = screen[PYBOY_SCREEN_BYTES - 1] != 0;
        // RAM
        g.wram.copy_from_slice(r.take(0x2000)?);
        g.unusable.copy_from_slice(r.take(0x60)?);
        g.io.copy_from_slice(r.take(0x4C)?);
        g.hram.copy_from_slice(r.take(0x7F)?);
        let _wram_select = r.u8()?;
        // Timer
        g.timer.div = r.u8()?;
        g.timer.tima = r.u8()? as u64;
        g.timer.div_counter = r.u16()? as u64;
        g.timer.tima_counter = r.u16()? as u64;
        g.timer.tma = r.u8()?;
        g.timer.tac = r.u8()?;
        g.timer.tima_reload_state = r.u8()?;
        g.timer.last_cycles = r.u64()?;
        g.timer.cycles_to_interrupt = r.i64()?;
        // Cartridge
        g.cart.rombank_selected = r.u8()? as usize;
        g.cart.rambank_selected = r.u8()? as usize;
        g.cart.rambank_enabled = r.b()?;
        g.cart.memorymodel = r.u8()?;
        let banks = g.cart.ram_banks;
        g.cart.ram[..banks * crate::cart::RAM_BANK]
            .copy_from_slice(r.take(banks * crate::cart::RAM_BANK)?);
        if g.cart.mbc == crate::cart::Mbc::Mbc1 {
            g.cart.bank_select_register1 = r.u8()?;
            g.cart.bank_select_register2 = r.u8()?;
        }
        g.joy_directional = r.u8()?;
        g.joy_standard = r.u8()?;
        g.serial.sb = r.u8()?;
        g.serial.sc = r.u8()?;
        g.serial.transfer_enabled = r.b()?;
        g.serial.internal_clock = r.b()?;
        g.serial.last_cycles = r.u64()?;
        g.serial.cycles_to_interrupt = r.i64()?;
        g.serial.clock = r.u64()?;
        g.serial.clock_target = r.u64()?;
        // SGB: 7 bytes, 4 joypad bytes, border tiles, map and palettes.
        r.take(7 + 4 + 0x2000 + 0x800 + 0x80)?;
        if r.1 != data.len() {
            return Err(format!(
                "{} bytes left after the SGB block: not a DMG state of PyBoy 2.8.1 with sound off",
                data.len() - r.1
            ));
        }
        g.frame_count = self.frame_count;
        g.refresh_fetch();
        *self = g;
        Ok(())
    }
}
