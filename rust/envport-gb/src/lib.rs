//! envport's DMG Game Boy emulator core. PyBoy 2.8.1 with sound emulation off is the reference:
//! its observable behaviour (registers, memory, timing of LY/STAT/DIV/TIMA and interrupts, frame
//! boundaries, screen) is what this crate reproduces; see the Python package
//! `envport.envs.gameboy` for the equivalence tests.

pub mod cart;
pub mod cpu;
pub mod gb;
pub mod lcd;
pub mod render;
pub mod state;
pub mod timer;

#[cfg(test)]
mod tests;

#[cfg(feature = "python")]
mod python;

pub use cart::RomError;
pub use gb::{GameBoy, Stall, BUTTON_NAMES};
