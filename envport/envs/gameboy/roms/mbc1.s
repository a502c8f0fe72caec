; mbc1.s - envport's MBC1 test ROM (64 KiB, 4 banks, 8 KiB RAM). Licence: MIT, as envport.
; Reads through every ROM bank register value and RAM enable/mode setting and reports in WRAM:
;   0xC000        frame counter (VBlank handler)
;   0xC010-C02F   the byte at 0x4000 after writing 0x00..0x1F to 0x2000 (bank 0 reads as 1)
;   0xC030-C033   the byte at 0x0000 in mode 1 after writing 0..3 to 0x4000 (bank 0 area)
;   0xC040        cartridge RAM read while disabled (0xFF), 0xC041 after enabling and writing
;   0xC042        the byte read back after disabling again
;   0xC050        1 when done
; Each bank N >= 1 starts with the byte 0xA0 + N; bank 0 has 0x31 (ld sp) at 0x0000.
        .module mbc1
        .area _HEADER (ABS)
        .org 0x0000
        .db 0x31
        .org 0x40
        jp vblank
        .org 0x100
        nop
        jp start
        .org 0x150
start:
        di
        ld sp, #0xDFF0
        ld a, #0x01
        ldh (0xFF), a
        xor a
        ldh (0x0F), a
        ei
        ; 5-bit bank register
        ld hl, #0xC010
        ld b, #0
1$:
        ld a, b
        ld (0x2000), a
        ld a, (0x4000)
        ld (hl+), a
        inc b
        ld a, b
        cp #0x20
        jr nz, 1$
        ; mode 1: the 2-bit register banks 0x0000-0x3FFF too (modulo 4 banks)
        ld a, #1
        ld (0x6000), a
        ld hl, #0xC030
        ld b, #0
2$:
        ld a, b
        ld (0x4000), a
        ld a, (0x0000)
        ld (hl+), a
        inc b
        ld a, b
        cp #4
        jr nz, 2$
        xor a
        ld (0x4000), a
        ld (0x6000), a
        ld a, #1
        ld (0x2000), a
        ; cartridge RAM gate
        ld a, (0xA000)
        ld (0xC040), a
        ld a, #0x0A
        ld (0x0000), a
        ld a, #0x5A
        ld (0xA000), a
        ld a, (0xA000)
        ld (0xC041), a
        xor a
        ld (0x0000), a
        ld a, (0xA000)
        ld (0xC042), a
        ld a, #1
        ld (0xC050), a
3$:
        halt
        nop
        jr 3$

vblank:
        push af
        ld a, (0xC000)
        inc a
        ld (0xC000), a
        pop af
        reti

        .area _CODE_1
        .db 0xA1
        .area _CODE_2
        .db 0xA2
        .area _CODE_3
        .db 0xA3
