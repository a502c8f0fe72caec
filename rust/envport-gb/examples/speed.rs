//! Frames per second of the core alone on a ROM file: `cargo run --release --example speed ROM`.
use std::time::Instant;

fn main() {
    let path = std::env::args().nth(1).expect("usage: speed ROM [FRAMES]");
    let frames: u64 = std::env::args().nth(2).map_or(3000, |s| s.parse().unwrap());
    let rom = std::fs::read(path).unwrap();
    let mut g = envport_gb::GameBoy::new(&rom, None).unwrap();
    g.tick(70, false);
    let t = Instant::now();
    g.tick(frames, false);
    let dt = t.elapsed().as_secs_f64();
    println!(
        "{:.0} frames/s ({} frames, {:.3} s)",
        frames as f64 / dt,
        frames,
        dt
    );
}
