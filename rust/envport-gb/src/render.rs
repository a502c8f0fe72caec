//! The scanline renderer: each line is drawn in one go when mode 3 ends, from the registers and
//! VRAM/OAM at that moment (background, window with its own line counter, up to 10 objects a
//! line), as PyBoy 2.8.1 draws it. Pixels are kept as palette shades 0-3; `rgba` converts them
//! with PyBoy's default "Grey" palette.

use crate::lcd::Lcd;

pub const ROWS: usize = 144;
pub const COLS: usize = 160;
/// PyBoy's default DMG palette, shade 0..3, as R, G, B.
pub const UNDRAWN: u8 = 4;
pub const GREY: [[u8; 3]; 4] = [
    [0xFF, 0xFF, 0xFF],
    [0x99, 0x99, 0x99],
    [0x55, 0x55, 0x55],
    [0, 0, 0],
];

#[derive(Clone)]
pub struct Screen {
    /// Shade (0-3, after the palette) of each pixel, row-major 144 x 160; 4 where nothing was
    /// drawn yet since power-on (PyBoy's buffer starts as zeros: RGBA 0, 0, 0, 0).
    pub shades: [u8; ROWS * COLS],
    /// 1 where the background/window pixel had colour index 0 (objects behind BG show there).
    pub col0: [u8; ROWS * COLS],
    /// The window's internal line counter (PyBoy starts it at 0 and resets it to -1 after line
    /// 143, so the very first frame's window starts one line further down).
    pub ly_window: i32,
}

impl Default for Screen {
    fn default() -> Self {
        Screen {
            shades: [UNDRAWN; ROWS * COLS],
            col0: [0; ROWS * COLS],
            ly_window: 0,
        }
    }
}

/// 0x01 in each byte lane of a u64.
const LANES: u64 = 0x0101_0101_0101_0101;

/// A tile row's bit plane spread over 8 byte lanes: lane k holds bit 7 - k (pixel k from the
/// left), so a little-endian store puts the pixels in screen order.
const SPREAD: [u64; 256] = {
    let mut t = [0u64; 256];
    let mut b = 0;
    while b < 256 {
        let mut k = 0;
        while k < 8 {
            if b & (0x80 >> k) != 0 {
                t[b] |= 1 << (8 * k);
            }
            k += 1;
        }
        b += 1;
    }
    t
};

#[inline(always)]
fn tile_pixel(vram: &[u8], tile: usize, row: usize, col: usize) -> u8 {
    let base = tile * 16 + row * 2;
    let lo = vram[base];
    let hi = vram[base + 1];
    let bit = 7 - col;
    (((hi >> bit) & 1) << 1) | ((lo >> bit) & 1)
}

impl Screen {
    pub fn blank(&mut self, lcd: &Lcd) {
        let shade = lcd.bgp & 3;
        self.shades.fill(shade);
        self.col0.fill(0);
    }

    pub fn draw_line(&mut self, lcd: &Lcd, ly: u8) {
        let y = ly as usize;
        if y >= ROWS {
            return;
        }
        let row = y * COLS;
        let bx = lcd.scx as usize;
        let by = lcd.scy as usize;
        let wx = lcd.wx as i32 - 7;
        let bg_map = if lcd.lcdc & 0x08 != 0 { 0x1C00 } else { 0x1800 };
        let win_map = if lcd.lcdc & 0x40 != 0 { 0x1C00 } else { 0x1800 };
        let draw_bg = |s: &mut Screen, from: usize, to: usize| {
            let yy = (y + by) % 256;
            s.draw_run(lcd, bg_map, row, from, to, bx, yy);
        };
        if lcd.lcdc & 0x20 != 0 && lcd.wy_activated_frame && wx < COLS as i32 {
            self.ly_window += 1;
            let start = wx.max(0) as usize;
            if start > 0 {
                draw_bg(self, 0, start);
            }
            let wy = self.ly_window.max(0) as usize;
            // Window pixel x shows window column x - wx (wx may be negative: WX < 7).
            let shift = (start as i32 - wx) as usize;
            self.draw_run(
                lcd,
                win_map,
                row,
                start,
                COLS,
                shift.wrapping_sub(start),
                wy,
            );
        } else if lcd.lcdc & 0x01 != 0 {
            draw_bg(self, 0, COLS);
        } else {
            self.shades[row..row + COLS].fill(lcd.bgp & 3);
            self.col0[row..row + COLS].fill(0);
        }
        if y == ROWS - 1 {
            self.ly_window = -1;
        }
        self.draw_sprites(lcd, y);
    }

    /// Screen pixels [from, to) of row `row` show map pixels (x + dx) mod 256 of map line
    /// `my` (map at `map`): whole tile rows are decoded 8 pixels at a time into a line buffer,
    /// then the run is copied from it at the fine scroll offset.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    fn draw_run(
        &mut self,
        lcd: &Lcd,
        map: usize,
        row: usize,
        from: usize,
        to: usize,
        dx: usize,
        my: usize,
    ) {
        if from >= to {
            return;
        }
        let mx0 = from.wrapping_add(dx) % 256;
        let fine = mx0 % 8;
        let n = to - from;
        let tiles = (fine + n).div_ceil(8);
        let map_row = map + (my / 8 * 32) % 0x400;
        let tile_row = (my % 8) * 2;
        let unsigned = lcd.lcdc & 0x10 != 0;
        let pal = lcd.bgp as u64;
        // Shade of each colour index, times 0x01 in every byte lane.
        let p = |c: u64| (pal >> (2 * c)) & 3;
        let (p0, p1, p2, p3) = (p(0), p(1), p(2), p(3));
        let mut shade_buf = [0u8; 8 * 21];
        let mut col0_buf = [0u8; 8 * 21];
        let vram = &lcd.vram[..0x2000];
        for t in 0..tiles {
            let tx = (mx0 / 8 + t) % 32;
            let idx = vram[map_row + tx] as usize;
            let tile = if unsigned { idx } else { (idx ^ 0x80) + 128 };
            let base = tile * 16 + tile_row;
            let lo = SPREAD[vram[base] as usize];
            let hi = SPREAD[vram[base + 1] as usize];
            let m3 = lo & hi;
            let m2 = hi & !lo;
            let m1 = lo & !hi;
            let m0 = LANES & !(lo | hi);
            let shades = p0 * m0 + p1 * m1 + p2 * m2 + p3 * m3;
            shade_buf[8 * t..8 * t + 8].copy_from_slice(&shades.to_le_bytes());
            col0_buf[8 * t..8 * t + 8].copy_from_slice(&m0.to_le_bytes());
        }
        self.shades[row + from..row + to].copy_from_slice(&shade_buf[fine..fine + n]);
        self.col0[row + from..row + to].copy_from_slice(&col0_buf[fine..fine + n]);
    }

    fn draw_sprites(&mut self, lcd: &Lcd, ly: usize) {
        if lcd.lcdc & 0x02 == 0 {
            return;
        }
        let height: i32 = if lcd.lcdc & 0x04 != 0 { 16 } else { 8 };
        let ly_i = ly as i32;
        let mut keys = [0i32; 10];
        let mut count = 0;
        for n in (0..0xA0).step_by(4) {
            let y = lcd.oam[n] as i32 - 16;
            let x = lcd.oam[n + 1] as i32 - 8;
            if y <= ly_i && ly_i < y + height {
                keys[count] = x * 65536 + n as i32;
                count += 1;
            }
            if count == 10 {
                break;
            }
        }
        // Drawn from the highest (x, index) to the lowest, so that the lowest ends on top.
        let keys = &mut keys[..count];
        keys.sort_unstable_by(|a, b| b.cmp(a));
        let row = ly * COLS;
        for &key in keys.iter() {
            let n = (key & 0xFF) as usize;
            let y = lcd.oam[n] as i32 - 16;
            let x0 = lcd.oam[n + 1] as i32 - 8;
            let mut tile = lcd.oam[n + 2] as usize;
            if height == 16 {
                tile &= 0xFE;
            }
            let attr = lcd.oam[n + 3];
            let xflip = attr & 0x20 != 0;
            let yflip = attr & 0x40 != 0;
            let behind = attr & 0x80 != 0;
            let palette = if attr & 0x10 != 0 { lcd.obp1 } else { lcd.obp0 };
            let dy = ly_i - y;
            let yy = if yflip { height - dy - 1 } else { dy } as usize;
            for dx in 0..8 {
                let x = x0 + dx;
                if !(0..COLS as i32).contains(&x) {
                    continue;
                }
                let xx = if xflip { 7 - dx } else { dx } as usize;
                let c = tile_pixel(&lcd.vram, tile + yy / 8, yy % 8, xx);
                if c == 0 {
                    continue;
                }
                let i = row + x as usize;
                if !behind || self.col0[i] != 0 {
                    self.shades[i] = (palette >> (2 * c)) & 3;
                }
            }
        }
    }

    /// The screen as PyBoy's `screen.ndarray`: 144 x 160 x RGBA.
    pub fn rgba_into(&self, out: &mut [u8]) {
        for (i, &s) in self.shades.iter().enumerate() {
            let px = if s == UNDRAWN {
                [0, 0, 0, 0]
            } else {
                let c = GREY[s as usize & 3];
                [c[0], c[1], c[2], 0xFF]
            };
            out[4 * i..4 * i + 4].copy_from_slice(&px);
        }
    }
}
