; hello.s - minimal DMG test ROM (no MBC, 32 KiB). Licence: MIT, as the rest of envport.
; WRAM 0xC000: frame counter, incremented by the VBlank handler
; WRAM 0xC001: joypad state, 1 = pressed
;              bit7 Down, bit6 Up, bit5 Left, bit4 Right,
;              bit3 Start, bit2 Select, bit1 B, bit0 A
; Screen: vertical stripes, 8 px black / 8 px white. The CPU HALTs until VBlank every frame.
        .module hello
        .area _HEADER (ABS)

        .org 0x40               ; VBlank interrupt vector
        jp vblank

        .org 0x100              ; cartridge entry point
        nop
        jp start
                                ; 0x104-0x14F: header, written by makebin -Z
        .org 0x150
start:
        di
        ld sp, #0xE000
wait_vbl:                       ; the LCD may only be switched off in VBlank
        ldh a, (0x44)           ; LY
        cp #144
        jr c, wait_vbl
        xor a
        ldh (0x40), a           ; LCDC = 0: LCD off

        ld hl, #0x8000          ; tile 0: 16 bytes of 0x00 = colour 0 everywhere
        ld b, #16
        xor a
fill_tile0:
        ld (hl+), a
        dec b
        jr nz, fill_tile0
        ld b, #16               ; tile 1 (0x8010): 16 bytes of 0xFF = colour 3
        ld a, #0xFF
fill_tile1:
        ld (hl+), a
        dec b
        jr nz, fill_tile1

        ld hl, #0x9800          ; BG map: tile index = address bit 0 (0,1,0,1,...)
        ld bc, #0x0400
fill_map:
        ld a, l
        and #0x01
        ld (hl+), a
        dec bc
        ld a, b
        or c
        jr nz, fill_map

        xor a
        ld (0xC000), a
        ld (0xC001), a
        ldh (0x42), a           ; SCY = 0
        ldh (0x43), a           ; SCX = 0
        ldh (0x0F), a           ; IF = 0
        ld a, #0xE4
        ldh (0x47), a           ; BGP = 11 10 01 00
        ld a, #0x91
        ldh (0x40), a           ; LCDC: LCD on, tiles at 0x8000, BG on
        ld a, #0x01
        ldh (0xFF), a           ; IE = VBlank only
        ei

main:
        halt
        nop
        ld a, #0x20             ; P14 low: select the direction keys
        ldh (0x00), a
        ldh a, (0x00)
        ldh a, (0x00)           ; read twice to let the lines settle
        cpl
        and #0x0F
        swap a
        ld b, a
        ld a, #0x10             ; P15 low: select the action buttons
        ldh (0x00), a
        ldh a, (0x00)
        ldh a, (0x00)
        cpl
        and #0x0F
        or b
        ld (0xC001), a
        ld a, #0x30             ; deselect both groups
        ldh (0x00), a
        jr main

vblank:
        push af
        ld a, (0xC000)
        inc a
        ld (0xC000), a
        pop af
        reti
