//! Save and load of the core's own state (a versioned little-endian byte string; the ROM and
//! boot ROM are not included: a state loads into a machine made from the same ROM).

use crate::gb::{GameBoy, Stall};

/// 02: with the PPU's per-line record (`Lcd::scanline_params`).
const MAGIC: &[u8; 8] = b"ENVPGB02";

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
        for p in &l.scanline_params {
            w.0.extend_from_slice(p);
        }
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
        for p in l.scanline_params.iter_mut() {
            p.copy_from_slice(r.take(5)?);
        }
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
        for p in g.lcd.scanline_params.iter_mut() {
            p.copy_from_slice(r.take(5)?); // PyBoy's per-line record for its API
        }
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

/// The bytes of PyBoy 2.8.1's sound block after the audio buffer, as PyBoy with sound emulation
/// off saves them on a DMG (observed on its states: the same at any time and on any ROM but for
/// `last_cycles`, the clock of its last peripheral catch-up, at `PYBOY_SOUND_LAST_CYCLES`).
const PYBOY_SOUND_TAIL_HEX: &str = concat!(
    "00000000000000e041000000000000e041000000800000000000000000000000",
    "0000000000000000000000000000000000030000000000000000000000000000",
    "0000000000000000000000000000400000000000000000000000000000000000",
    "0000000000000400000000000000000000000000000000000000000000000000",
    "0000000000000000000000000000000000000000000000000000000000000000",
    "0000000000000000000000000000000000000000000000400000000000000000",
    "0000000000000000000000000000000400000000000000000000000000000000",
    "00000000000000000000ffffffffffffffffffffffffffffffff000000000000",
    "0000010000000000000000000000000000040000000000000000000000000000",
    "0000000000000000000000000000000000000000000000000000000000400000",
    "0000000000000000000000000000000000000000000800000000000000010000",
    "0000000000004000000000000000000000000000000000000000000000000000",
    "0000000000000000000000000000",
);
const PYBOY_SOUND_LAST_CYCLES: usize = 33;
/// Samples per frame of PyBoy's default 48 kHz (the audio buffer holds one more, 2 bytes each).
const PYBOY_SAMPLES_PER_FRAME: u64 = 804;

fn hex_bytes(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex constant"))
        .collect()
}

impl GameBoy {
    /// The machine as a PyBoy 2.8.1 save state (format 29, DMG, sound off): what
    /// `PyBoy.load_state` takes, field for field the inverse of `load_pyboy_state`. The parts
    /// the core does not emulate are written as PyBoy with sound emulation off writes them (the
    /// sound block, the Super Game Boy block, the unimplemented object-priority byte). See
    /// `pyboy_state_gaps` for what the format cannot carry.
    pub fn save_pyboy_state(&self) -> Vec<u8> {
        let mut w = W(Vec::with_capacity(160 * 1024));
        w.u8(29);
        w.b(self.bootrom_enabled);
        for _ in 0..4 {
            w.u8(0); // KEY0, KEY1, double speed, CGB
        }
        for v in [self.a, self.f, self.b, self.c, self.d, self.e] {
            w.u8(v);
        }
        w.u16(self.hl);
        w.u16(self.sp);
        w.u16(self.pc);
        w.b(self.ime);
        w.u8(self.ei_delay);
        w.b(self.halted);
        w.b(self.stopped);
        w.u8(self.ie_reg);
        w.b(self.interrupt_queued);
        w.u8(self.if_reg);
        w.u64(self.cycles);
        w.b(self.dma_active);
        w.b(self.dma_reading);
        w.u8(self.dma_source);
        w.u8(self.dma_index);
        w.u64(self.dma_start_cycle);
        // LCD
        let l = &self.lcd;
        w.0.extend_from_slice(&l.vram);
        w.0.extend_from_slice(&l.oam);
        for v in [l.lcdc, l.bgp, l.obp0, l.obp1, l.stat.value, l.ly, l.lyc] {
            w.u8(v);
        }
        for v in [l.scy, l.scx, l.wy, l.wx] {
            w.u8(v);
        }
        w.u8(0xFF); // object priority mode: not implemented by PyBoy, always 0xFF
        for p in &l.scanline_params {
            w.0.extend_from_slice(p);
        }
        for _ in 0..3 {
            w.u8(0); // CGB, downgraded, speed shift
        }
        w.b(l.frame_done);
        w.b(l.first_frame);
        w.b(l.reset);
        w.u64(l.last_cycles);
        w.u64(l.clock);
        w.u64(l.clock_target);
        w.u8(l.next_stat_mode);
        w.u8(l.stat_transition);
        // Sound: audio buffer head, samples per frame, cycles per sample (a double), the empty
        // buffer, then the fixed tail with the catch-up clock, which is the PPU's.
        w.u64(0);
        w.u64(PYBOY_SAMPLES_PER_FRAME);
        w.0.extend_from_slice(&(4_194_304f64 / 48_000f64).to_le_bytes());
        w.0.resize(w.0.len() + (PYBOY_SAMPLES_PER_FRAME as usize + 1) * 2, 0);
        let mut tail = hex_bytes(PYBOY_SOUND_TAIL_HEX);
        tail[PYBOY_SOUND_LAST_CYCLES..PYBOY_SOUND_LAST_CYCLES + 8]
            .copy_from_slice(&l.last_cycles.to_le_bytes());
        w.0.extend_from_slice(&tail);
        // Renderer: an RGBA word (PyBoy's "Grey") and an attribute byte (BG colour 0) a pixel.
        for (&s, &c0) in self.screen.shades.iter().zip(self.screen.col0.iter()) {
            let word = if s == crate::render::UNDRAWN {
                [0, 0, 0, 0]
            } else {
                let c = crate::render::GREY[s as usize & 3];
                [c[0], c[1], c[2], 0xFF]
            };
            w.0.extend_from_slice(&word);
            w.u8(c0);
        }
        w.b(l.wy_activated_frame);
        // RAM
        w.0.extend_from_slice(&self.wram);
        w.0.extend_from_slice(&self.unusable);
        w.0.extend_from_slice(&self.io);
        w.0.extend_from_slice(&self.hram);
        w.u8(0); // WRAM bank select (CGB)
                 // Timer
        let t = &self.timer;
        w.u8(t.div);
        w.u8(t.tima as u8);
        w.u16(t.div_counter as u16);
        w.u16(t.tima_counter as u16);
        w.u8(t.tma);
        w.u8(t.tac);
        w.u8(t.tima_reload_state);
        w.u64(t.last_cycles);
        w.i64(t.cycles_to_interrupt);
        // Cartridge
        let c = &self.cart;
        w.u8(c.rombank_selected as u8);
        w.u8(c.rambank_selected as u8);
        w.b(c.rambank_enabled);
        w.u8(c.memorymodel);
        w.0.extend_from_slice(&c.ram[..c.ram_banks * crate::cart::RAM_BANK]);
        if c.mbc == crate::cart::Mbc::Mbc1 {
            w.u8(c.bank_select_register1);
            w.u8(c.bank_select_register2);
        }
        w.u8(self.joy_directional);
        w.u8(self.joy_standard);
        let s = &self.serial;
        w.u8(s.sb);
        w.u8(s.sc);
        w.b(s.transfer_enabled);
        w.b(s.internal_clock);
        w.u64(s.last_cycles);
        w.i64(s.cycles_to_interrupt);
        w.u64(s.clock);
        w.u64(s.clock_target);
        // Super Game Boy (not detected): one player, joypads released, empty border data.
        w.0.extend_from_slice(&[0, 0, 1, 0, 0, 0, 0, 0xFF, 0xFF, 0xFF, 0xFF]);
        w.0.resize(w.0.len() + 0x2000 + 0x800 + 0x80, 0);
        w.0
    }

    /// The parts of the machine that PyBoy's format does not carry and that differ from what a
    /// PyBoy loading `save_pyboy_state()` would have (as `load_pyboy_state` models that load):
    /// empty when PyBoy loading the export is the same machine. Found by loading the export into
    /// a fresh core and comparing.
    pub fn pyboy_state_gaps(&self) -> Vec<&'static str> {
        let mut g = match GameBoy::new(&self.cart.rom, Some(&self.boot_rom)) {
            Ok(g) => g,
            Err(_) => return vec!["ROM"],
        };
        if g.load_pyboy_state(&self.save_pyboy_state()).is_err() {
            return vec!["the state itself (the export does not load)"];
        }
        let mut gaps = Vec::new();
        if self.stall.is_some() {
            gaps.push("stall (an unused opcode was reached)");
        }
        if g.halted_during_ei != self.halted_during_ei {
            gaps.push("halted_during_ei");
        }
        // PyBoy's load leaves the window's line counter at its power-on value (the first
        // window line drawn after it shows window line 1, where the machine would show 0): it
        // shows only when the window is drawn before line 143 ends the frame, so only a
        // machine with the window on is refused. (A game switching the window on later in
        // the frame would show it: the screen differs there, RAM and registers never do.)
        if self.lcd.lcdc & 0x20 != 0 && g.screen.ly_window != self.screen.ly_window {
            gaps.push("window line counter");
        }
        g.screen.ly_window = self.screen.ly_window;
        if g.cart.rombank_selected_low != self.cart.rombank_selected_low {
            gaps.push("MBC1 low ROM bank");
        }
        // Read only at the end of mode 3, and computed again on entering it.
        if self.lcd.stat.mode == 3 && g.lcd.mode3_adjustment != self.lcd.mode3_adjustment {
            gaps.push("mode-3 length");
        }
        g.lcd.mode3_adjustment = self.lcd.mode3_adjustment;
        g.frame_count = self.frame_count;
        if gaps.is_empty() && g.save_state() != self.save_state() {
            gaps.push("other state (the export and its import differ)");
        }
        gaps
    }
}
