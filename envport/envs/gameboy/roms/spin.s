; spin.s - envport's CPU-bound benchmark ROM (no MBC, 32 KiB). Licence: MIT, as envport.
; The CPU never halts: interrupts off, LCD on (as the boot ROM left it), an endless loop of
; 8- and 16-bit arithmetic, CB operations, calls and WRAM traffic.
; WRAM 0xC000-0xC0FF: a ring the loop keeps writing; 0xC100-0xC101: loop counter (16 bit).
        .module spin
        .area _HEADER (ABS)
        .org 0x100
        nop
        jp start
        .org 0x150
start:
        di
        ld sp, #0xDFF0
        ld hl, #0xC000
        ld bc, #0x1234
        ld de, #0x0001
        xor a
loop:
        add a, c
        adc a, b
        xor e
        rlca
        ld (hl), a
        inc l                   ; stays within 0xC000-0xC0FF
        inc bc
        swap a
        sub d
        call mix
        ld a, (0xC100)
        add a, #1
        ld (0xC100), a
        ld a, (0xC101)
        adc a, #0
        ld (0xC101), a
        jr loop

mix:
        push hl
        ld hl, #0x0101
        add hl, de
        ld d, h
        ld e, l
        srl d
        rr e
        bit 0, e
        jr z, 1$
        set 7, d
1$:
        pop hl
        ret
