//! Unit tests of the core: instruction results, flags and cycle counts against documented DMG
//! behaviour (Pan Docs' instruction tables), the interrupt/HALT rules, cartridge checks.

use crate::cart::{header_checksum, RomError};
use crate::gb::GameBoy;

/// A 32 KiB ROM-only cartridge with a valid header that spins at 0x0150.
fn rom(cart_type: u8) -> Vec<u8> {
    let mut r = vec![0u8; 0x8000];
    r[0x100] = 0x00;
    r[0x101] = 0xC3;
    r[0x102] = 0x50;
    r[0x103] = 0x01;
    r[0x150] = 0x18; // jr -2
    r[0x151] = 0xFE;
    r[0x147] = cart_type;
    r[0x14D] = header_checksum(&r);
    r
}

/// A machine past boot with `code` at 0xC100 and PC there.
fn machine(code: &[u8]) -> GameBoy {
    let mut g = GameBoy::new(&rom(0), None).unwrap();
    g.bootrom_enabled = false;
    for (i, &b) in code.iter().enumerate() {
        g.wram[0x100 + i] = b;
    }
    g.pc = 0xC100;
    g.sp = 0xDFF0;
    g
}

/// Runs one instruction; returns the cycles it took.
fn step(g: &mut GameBoy) -> u64 {
    let c0 = g.cycles;
    g.step();
    g.cycles - c0
}

#[test]
fn add_sets_zero_half_and_carry() {
    let mut g = machine(&[0x80]); // add a, b
    g.a = 0x3A;
    g.b = 0xC6;
    assert_eq!(step(&mut g), 4);
    assert_eq!((g.a, g.f), (0x00, 0xB0));
}

#[test]
fn adc_and_sbc_use_the_carry() {
    let mut g = machine(&[0xCE, 0x0F]); // adc a, #0x0F
    g.a = 0xE1;
    g.f = 0x10;
    assert_eq!(step(&mut g), 8);
    assert_eq!((g.a, g.f), (0xF1, 0x20));
    let mut g = machine(&[0x9B]); // sbc a, e
    g.a = 0x3B;
    g.e = 0x2A;
    g.f = 0x10;
    step(&mut g);
    assert_eq!((g.a, g.f), (0x10, 0x40));
}

#[test]
fn sub_cp_and_logic_flags() {
    let mut g = machine(&[0x90, 0xB8, 0xA0, 0xA8, 0xB0]); // sub b; cp b; and b; xor b; or b
    g.a = 0x3E;
    g.b = 0x3E;
    step(&mut g);
    assert_eq!((g.a, g.f), (0x00, 0xC0));
    g.a = 0x3C;
    g.b = 0x40;
    step(&mut g);
    assert_eq!((g.a, g.f), (0x3C, 0x50)); // cp: A kept, N and C
    g.b = 0x03;
    step(&mut g);
    assert_eq!((g.a, g.f), (0x00, 0xA0)); // and: Z and H
    g.a = 0xFF;
    g.b = 0x0F;
    step(&mut g);
    assert_eq!((g.a, g.f), (0xF0, 0x00));
    g.a = 0;
    g.b = 0;
    step(&mut g);
    assert_eq!((g.a, g.f), (0x00, 0x80));
}

#[test]
fn inc_dec_keep_carry() {
    let mut g = machine(&[0x3C, 0x05]); // inc a; dec b
    g.a = 0xFF;
    g.f = 0x10;
    step(&mut g);
    assert_eq!((g.a, g.f), (0x00, 0xB0));
    g.b = 0x10;
    g.f = 0x00;
    step(&mut g);
    assert_eq!((g.b, g.f), (0x0F, 0x60));
}

#[test]
fn daa_corrects_bcd_addition_and_subtraction() {
    let mut g = machine(&[0x80, 0x27, 0x90, 0x27]); // add a,b; daa; sub b; daa
    g.a = 0x15;
    g.b = 0x27;
    step(&mut g);
    step(&mut g);
    assert_eq!(g.a, 0x42);
    step(&mut g);
    step(&mut g);
    assert_eq!(g.a, 0x15);
}

#[test]
fn rotations_and_cb_group() {
    let mut g = machine(&[0x07, 0xCB, 0x37, 0xCB, 0x3F, 0xCB, 0x2F, 0xCB, 0x11]);
    g.a = 0x80; // rlca
    step(&mut g);
    assert_eq!((g.a, g.f), (0x01, 0x10));
    g.a = 0xF1; // swap a
    assert_eq!(step(&mut g), 8);
    assert_eq!((g.a, g.f), (0x1F, 0x00));
    g.a = 0x01; // srl a
    step(&mut g);
    assert_eq!((g.a, g.f), (0x00, 0x90));
    g.a = 0x81; // sra a
    step(&mut g);
    assert_eq!((g.a, g.f), (0xC0, 0x10));
    g.c = 0x80; // rl c with carry in
    step(&mut g);
    assert_eq!((g.c, g.f), (0x01, 0x10));
}

#[test]
fn bit_res_set_on_hl_take_their_cycles() {
    let mut g = machine(&[0xCB, 0x7E, 0xCB, 0xFE, 0xCB, 0x86]); // bit 7,(hl); set 7,(hl); res 0,(hl)
    g.hl = 0xC000;
    g.wram[0] = 0x01;
    g.f = 0x10;
    assert_eq!(step(&mut g), 12);
    assert_eq!(g.f, 0xB0);
    assert_eq!(step(&mut g), 16);
    assert_eq!(g.wram[0], 0x81);
    assert_eq!(step(&mut g), 16);
    assert_eq!(g.wram[0], 0x80);
}

#[test]
fn sixteen_bit_arithmetic() {
    let mut g = machine(&[0x09, 0xE8, 0xFF, 0xF8, 0x01]); // add hl,bc; add sp,-1; ld hl,sp+1
    g.hl = 0x0FFF;
    g.set_bc_for_test(0x0001);
    g.f = 0x80;
    step(&mut g);
    assert_eq!((g.hl, g.f), (0x1000, 0xA0)); // Z kept, H set
    g.sp = 0x0000;
    assert_eq!(step(&mut g), 16);
    assert_eq!((g.sp, g.f), (0xFFFF, 0x00));
    g.sp = 0x00FF;
    assert_eq!(step(&mut g), 12);
    assert_eq!((g.hl, g.f), (0x0100, 0x30));
}

#[test]
fn stack_calls_and_jumps_take_documented_cycles() {
    // push bc; pop af; call 0xC110; (at 0xC110) ret; jr +0 taken; jr nz not taken (Z set)
    let mut code = vec![0xC5, 0xF1, 0xCD, 0x10, 0xC1, 0x18, 0x00, 0x20, 0x00];
    code.resize(0x10, 0x00);
    code.push(0xC9);
    let mut g = machine(&code);
    g.set_bc_for_test(0x12FF);
    assert_eq!(step(&mut g), 16);
    assert_eq!(step(&mut g), 12);
    assert_eq!((g.a, g.f), (0x12, 0xF0)); // POP AF drops F's low nibble
    assert_eq!(step(&mut g), 24);
    assert_eq!(g.pc, 0xC110);
    assert_eq!(step(&mut g), 16);
    assert_eq!(g.pc, 0xC105);
    assert_eq!(step(&mut g), 12);
    assert_eq!(step(&mut g), 8);
    assert_eq!(g.pc, 0xC109);
}

#[test]
fn interrupt_dispatch_pushes_pc_and_takes_20_cycles() {
    let mut g = machine(&[0x00, 0x00]);
    g.ime = true;
    g.ie_reg = 0x05;
    g.if_reg = 0x04; // timer
    let c0 = g.cycles;
    g.cpu_tick(1); // the dispatch alone overshoots a budget of 1 cycle
    assert_eq!(g.cycles - c0, 20);
    assert_eq!(g.pc, 0x0050);
    assert_eq!(g.sp, 0xDFEE);
    assert_eq!(g.wram[0x1FEE], 0x00);
    assert_eq!(g.wram[0x1FEF], 0xC1);
    assert!(!g.ime);
    assert_eq!(g.if_reg, 0);
}

#[test]
fn halt_with_interrupts_off_resumes_after_the_halt() {
    let mut g = machine(&[0x76, 0x3C, 0x3C]); // halt; inc a; inc a
    g.ie_reg = 0x01;
    step(&mut g);
    assert!(g.halted);
    assert_eq!(g.pc, 0xC100); // PC stays on HALT while halted
    g.if_reg = 0x01;
    g.cpu_tick(4); // pending with IME off: leave HALT, no dispatch, run `inc a`
    assert!(!g.halted);
    assert_eq!(g.a, 1);
    assert_eq!(g.pc, 0xC102);
}

#[test]
fn ei_takes_effect_after_the_next_instruction() {
    let mut g = machine(&[0xFB, 0x00, 0x00]);
    step(&mut g);
    assert!(!g.ime);
    step(&mut g);
    assert!(g.ime);
}

#[test]
fn unused_opcode_stalls_instead_of_running_on() {
    let mut g = machine(&[0xD3]);
    step(&mut g);
    assert_eq!(
        g.stall,
        Some(crate::gb::Stall::UnusedOpcode {
            opcode: 0xD3,
            pc: 0xC100
        })
    );
}

#[test]
fn bad_roms_are_refused_before_emulation() {
    let mut r = rom(0);
    r[0x14D] ^= 1;
    assert!(matches!(
        GameBoy::new(&r, None),
        Err(RomError::HeaderChecksum { .. })
    ));
    assert!(matches!(
        GameBoy::new(&rom(0)[..0x5000], None),
        Err(RomError::Size(0x5000))
    ));
    assert!(matches!(
        GameBoy::new(&rom(0x13), None),
        Err(RomError::CartridgeType(0x13))
    ));
    assert!(GameBoy::new(&rom(0x01), None).is_ok());
}

#[test]
fn mbc1_switches_banks_and_gates_ram() {
    let mut r = vec![0u8; 0x10000]; // 4 banks
    for b in 0..4 {
        r[b * 0x4000 + 0x10] = 0xA0 + b as u8;
    }
    r[0x147] = 0x03;
    r[0x149] = 0x02;
    r[0x14D] = header_checksum(&r);
    let mut g = GameBoy::new(&r, None).unwrap();
    for (sel, want) in [(0u8, 0xA1u8), (1, 0xA1), (2, 0xA2), (3, 0xA3), (5, 0xA1)] {
        g.write(0x2000, sel);
        assert_eq!(g.read(0x4010), want, "bank register {sel}");
    }
    assert_eq!(g.read(0xA000), 0xFF); // RAM disabled
    g.write(0x0000, 0x0A);
    g.write(0xA000, 0x5A);
    assert_eq!(g.read(0xA000), 0x5A);
    g.write(0x0000, 0x00);
    assert_eq!(g.read(0xA000), 0xFF);
}

#[test]
fn frames_are_70224_cycles_with_the_lcd_on() {
    let mut g = GameBoy::new(&rom(0), None).unwrap();
    g.tick(3, false); // boot (LCD switched on: the first frame ends at once) and two frames
    let c = g.cycles;
    g.tick(10, false);
    let per_frame = (g.cycles - c) as f64 / 10.0;
    assert!(
        (per_frame - 70224.0).abs() < 24.0,
        "{per_frame} cycles a frame"
    );
    assert_eq!(g.lcd.ly, 0);
    assert_eq!(g.lcd.stat.mode, 2);
}

#[test]
fn state_round_trip_reproduces_the_next_frames() {
    let mut g = GameBoy::new(&rom(0), None).unwrap();
    g.tick(5, false);
    let s = g.save_state();
    g.tick(7, true);
    let after = (g.cycles, g.pc, g.screen.shades.clone());
    let mut h = GameBoy::new(&rom(0), None).unwrap();
    h.load_state(&s).unwrap();
    h.tick(7, true);
    assert_eq!((h.cycles, h.pc, h.screen.shades.clone()), after);
    assert!(h.load_state(&s[..100]).is_err());
}
