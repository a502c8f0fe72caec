; dma.s - envport's OAM DMA conformance ROM (no MBC, 32 KiB). Licence: MIT, as envport (the
; project's own source).
;
; Four 160-byte object tables (40 objects each, different patterns): in WRAM (0xC100), in ROM
; (0x2000), in VRAM (0x8800, written while the LCD is off) and in WRAM at 0xC200, read through
; echo RAM (source page 0xE2). Every frame, right after VBlank starts, the main loop copies the
; next table by OAM DMA, from a routine in HRAM that also probes the bus while the copy runs:
; OAM and WRAM read right after the start, OAM near the end and just after it (into HRAM, then
; logged). On frames with bit 2 set, a LYC interrupt at line 60 starts another DMA (of the ROM
; table) mid-frame, with the LCD drawing: the screen (compared with PyBoy's every frame) shows
; the objects change below that line.
;
; WRAM:
;   0xC000 frame counter (VBlank handler)   0xC001 VBlank flag   0xC002 mid-frame DMAs
;   0xC003 the log's next entry (low byte)
;   0xC300-C3FF log: (OAM at the start, WRAM at the start, OAM near the end, OAM after) per
;               DMA, 64 entries, wrapping
        .module dma
        .area _HEADER (ABS)

        .org 0x40
        jp vblank
        .org 0x48
        jp stat_isr

        .org 0x100
        nop
        jp start

        .org 0x150
start:
        di
        ld sp, #0xE000
wait_vbl:
        ldh a, (0x44)
        cp #144
        jr c, wait_vbl
        xor a
        ldh (0x40), a           ; LCD off
        ld hl, #0x8000          ; tile 0 blank, tile 1 a box, tile 2 a cross
        ld de, #tiles
        ld bc, #48
        call copy
        ld hl, #0x9800          ; BG: blank
        ld bc, #0x0400
1$:
        xor a
        ld (hl+), a
        dec bc
        ld a, b
        or c
        jr nz, 1$
        ld hl, #0xC000          ; WRAM 0xC000-0xC3FF = 0
        ld bc, #0x0400
2$:
        xor a
        ld (hl+), a
        dec bc
        ld a, b
        or c
        jr nz, 2$
        ; the tables: WRAM 0xC100 (Y = 16 + 3i, X = 8 + 4i), VRAM 0x8800 (Y = 140 - 3i,
        ; X = 8 + 4i), WRAM 0xC200 (Y = 16 + 3i, X = 168 - 4i); tile 1 + (i & 1)
        ld hl, #0xC100
        ld b, #16
        ld c, #8
        ld d, #3
        ld e, #4
        call table
        ld hl, #0x8800
        ld b, #140
        ld c, #8
        ld d, #0xFD
        ld e, #4
        call table
        ld hl, #0xC200
        ld b, #16
        ld c, #168
        ld d, #3
        ld e, #0xFC
        call table
        ld hl, #0xFF80          ; the DMA routine runs from HRAM
        ld de, #dma_routine
        ld bc, #dma_routine_end - dma_routine
        call copy

        ld a, #0xE4
        ldh (0x47), a
        ld a, #0xD2
        ldh (0x48), a
        ld a, #60
        ldh (0x45), a           ; LYC (the interrupt is enabled frame by frame)
        xor a
        ldh (0x41), a
        ldh (0x0F), a
        ld a, #0x93
        ldh (0x40), a           ; LCD on, tiles 0x8000, objects on, BG on
        ld a, #0x03
        ldh (0xFF), a           ; IE = VBlank | STAT
        ei
main:
        halt
        nop
        ld a, (0xC001)
        or a
        jr z, main
        xor a
        ld (0xC001), a
        ld a, (0xC000)
        and #3
        ld hl, #sources
        add a, l
        ld l, a
        jr nc, 3$
        inc h
3$:
        ld a, (hl)
        call dma_logged
        ld a, (0xC000)          ; a mid-frame DMA on frames with bit 2 set
        and #4
        rlca
        rlca
        rlca
        rlca                    ; 4 -> 0x40: STAT's LYC interrupt on or off
        ldh (0x41), a
        jr main

sources:
        .db 0xC1, 0x20, 0x88, 0xE2

; dma_logged: OAM DMA from page A through the HRAM routine, its probes logged
dma_logged:
        push hl
        push de
        ld hl, #0xFE00
        ld de, #0xC000
        call 0xFF80
        ld a, (0xC003)
        ld l, a
        ld h, #0xC3
        ldh a, (0xF0)
        ld (hl+), a
        ldh a, (0xF1)
        ld (hl+), a
        ldh a, (0xF2)
        ld (hl+), a
        ldh a, (0xF3)
        ld (hl+), a
        ld a, l
        ld (0xC003), a
        pop de
        pop hl
        ret

; table: 40 objects at HL: Y from B (step D), X from C (step E), tile 1 + (i & 1), attr 0
table:
        ld a, #40
        push af
1$:
        ld a, b
        ld (hl+), a
        add a, d
        ld b, a
        ld a, c
        ld (hl+), a
        add a, e
        ld c, a
        pop af
        push af
        and #1
        inc a
        ld (hl+), a
        xor a
        ld (hl+), a
        pop af
        dec a
        push af
        jr nz, 1$
        pop af
        ret

copy:
        ld a, (de)
        ld (hl+), a
        inc de
        dec bc
        ld a, b
        or c
        jr nz, copy
        ret

vblank:
        push af
        ld a, (0xC000)
        inc a
        ld (0xC000), a
        ld a, #1
        ld (0xC001), a
        pop af
        reti

stat_isr:
        push af
        push hl
        ld hl, #0xC002
        inc (hl)
        pop hl
        ld a, #0x20
        call dma_logged
        pop af
        reti

; the HRAM routine (HL = 0xFE00, DE = 0xC000): start the DMA from page A, probe OAM and WRAM
; at once, wait, probe OAM near the end and after it; the probes go to HRAM 0xFFF0-F3
dma_routine:
        ldh (0x46), a
        ld a, (hl)
        ldh (0xF0), a
        ld a, (de)
        ldh (0xF1), a
        ld a, #36
1$:
        dec a
        jr nz, 1$
        ld a, (hl)
        ldh (0xF2), a
        ld a, #4
2$:
        dec a
        jr nz, 2$
        ld a, (hl)
        ldh (0xF3), a
        ret
dma_routine_end:

tiles:
        .db 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00
        .db 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00
        .db 0xFF, 0xFF, 0x81, 0x81, 0x81, 0x81, 0x81, 0x81
        .db 0x81, 0x81, 0x81, 0x81, 0x81, 0x81, 0xFF, 0xFF
        .db 0x18, 0x18, 0x18, 0x18, 0xFF, 0x00, 0xFF, 0x00
        .db 0x18, 0x18, 0x18, 0x18, 0x18, 0x18, 0x18, 0x18

        .org 0x2000             ; the ROM table: Y = 80 + 2i (mod), X = 90 + 7i (mod), tiles 2/1
rom_table:
        .db 80, 90, 2, 0x00,  82, 97, 1, 0x20,  84, 104, 2, 0x40,  86, 111, 1, 0x60
        .db 88, 118, 2, 0x10,  90, 125, 1, 0x30,  92, 132, 2, 0x80,  94, 139, 1, 0x00
        .db 96, 146, 2, 0x20,  98, 153, 1, 0x40,  100, 160, 2, 0x60,  102, 167, 1, 0x10
        .db 104, 174, 2, 0x30,  106, 9, 1, 0x80,  108, 16, 2, 0x00,  110, 23, 1, 0x20
        .db 112, 30, 2, 0x40,  114, 37, 1, 0x60,  116, 44, 2, 0x10,  118, 51, 1, 0x30
        .db 120, 58, 2, 0x80,  122, 65, 1, 0x00,  124, 72, 2, 0x20,  126, 79, 1, 0x40
        .db 128, 86, 2, 0x60,  130, 93, 1, 0x10,  132, 100, 2, 0x30,  134, 107, 1, 0x80
        .db 136, 114, 2, 0x00,  138, 121, 1, 0x20,  140, 128, 2, 0x40,  142, 135, 1, 0x60
        .db 144, 142, 2, 0x10,  146, 149, 1, 0x30,  148, 156, 2, 0x80,  150, 163, 1, 0x00
        .db 20, 170, 2, 0x20,  22, 10, 1, 0x40,  24, 17, 2, 0x60,  26, 24, 1, 0x10
