//! A digest of the core's whole state after every frame, for checking that a speed change
//! leaves what the core computes unchanged (run it before and after, compare the lines):
//!
//!     cargo run --release --example trace -- ROM_DIR [FRAMES]
//!
//! ROM_DIR holds the project's assembled ROMs (envport/envs/gameboy/roms/build). Each ROM runs
//! from power-on through the project's boot ROM with a fixed button schedule; every 3rd frame is
//! rendered; the state (`save_state`: registers, memory, PPU/timer/serial/DMA, screen) is hashed
//! after each frame. One line per ROM: name, frames, digest.

use std::collections::hash_map::DefaultHasher;
use std::hash::Hasher;

fn main() {
    let dir = std::env::args()
        .nth(1)
        .expect("usage: trace ROM_DIR [FRAMES]");
    let frames: u64 = std::env::args().nth(2).map_or(1500, |s| s.parse().unwrap());
    for name in ["spin", "hello", "cputest", "mbc1", "catch"] {
        let path = format!("{dir}/{name}.gb");
        let rom = std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
        let mut g = envport_gb::GameBoy::new(&rom, None).unwrap();
        // DefaultHasher::new() has fixed keys: the digest is the same from run to run.
        let mut h = DefaultHasher::new();
        for f in 0..frames {
            // Buttons change every 37 frames through all 256 masks (Start among them).
            g.set_buttons(((f / 37) * 73 % 256) as u8);
            let ok = g.tick(1, f % 3 == 0);
            h.write_u8(ok as u8);
            h.write(&g.save_state());
        }
        println!("{name:8} {frames} {:016x}", h.finish());
    }
}
