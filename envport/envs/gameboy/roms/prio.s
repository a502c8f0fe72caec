; prio.s - envport's background/window/object priority conformance ROM (no MBC, 32 KiB).
; Licence: MIT, as envport (the project's own source).
;
; Every frame the main loop (woken by VBlank) derives a new picture from the frame counter f:
;   LCDC: BG/window enable off when f % 16 = 15; objects 8x16 when bit 3 of f; tile data at
;         0x8800 (signed) when bit 4; window on when bit 2, its map 0x9C00 when bit 5;
;   WX from (0 6 7 8 80 159 166 167)[f % 8], WY from (0 1 40 100 143 144 0 20)[f / 8 % 8];
;   SCX = f, SCY = 3f;
;   40 objects: 0-11 on one line, 4 px apart (lower X wins; more than 10 on the line: the
;   rest are dropped), object 0 at X = 0 (off screen, still counted) on odd frames; 12-15 at
;   one place (the lower OAM index wins); 16-23 over the striped background with the
;   behind-BG bit on the even ones, X/Y flips and OBP1 from f; 24-39 spread and moving.
; A LYC interrupt at line 72 toggles the window (its line counter only advances on lines it
; is drawn on), adds 13 to SCX and moves WX by 16 for the rest of the frame.
; The tests compare the screen with PyBoy's every frame.
;
; The objects are computed into a shadow OAM (0xC100-0xC19F) and copied by OAM DMA (from a
; routine in HRAM) at the start of the next VBlank.
; WRAM: 0xC000 frame counter (VBlank handler), 0xC001 VBlank flag, 0xC002 LCDC written this
; frame, 0xC003 WX written, 0xC004 WY written, 0xC005 scratch; 0xC100-C19F shadow OAM.
        .module prio
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
        ld hl, #0x8000          ; tiles 0-7 (0x8000 block)
        ld de, #tiles
        ld bc, #128
        call copy
        ld hl, #0x9000          ; tiles 0-3 of the 0x8800 block (signed indices 0-3)
        ld de, #tiles_signed
        ld bc, #64
        call copy
        ; BG map 0x9800: (x + y) % 4; window map 0x9C00: 2 or 3 by (x ^ y) & 1
        ld hl, #0x9800
1$:
        ld a, l
        and #0x1F
        ld b, a                 ; x
        ld a, l
        rlca
        rlca
        rlca
        and #0x07
        ld c, a
        ld a, h
        and #0x03
        rlca
        rlca
        rlca
        or c                    ; y = (hl - 0x9800) / 32
        ld c, a
        add a, b
        and #3
        ld (hl), a
        push hl
        ld de, #0x0400
        add hl, de
        ld a, b
        xor c
        and #1
        add a, #2
        ld (hl), a
        pop hl
        inc hl
        ld a, h
        cp #0x9C
        jr nz, 1$

        ld hl, #0xC000          ; WRAM 0xC000-0xC1FF = 0 (the shadow OAM too)
        ld bc, #0x0200
2$:
        xor a
        ld (hl+), a
        dec bc
        ld a, b
        or c
        jr nz, 2$
        ld hl, #0xFF80          ; the OAM DMA routine runs from HRAM
        ld de, #dma_routine
        ld bc, #dma_routine_end - dma_routine
        call copy
        ld a, #0xE4
        ldh (0x47), a           ; BGP
        ld a, #0xD2
        ldh (0x48), a           ; OBP0
        ld a, #0x1B
        ldh (0x49), a           ; OBP1
        ld a, #72
        ldh (0x45), a           ; LYC
        ld a, #0x40
        ldh (0x41), a           ; STAT: LYC interrupt
        call picture
        xor a
        ldh (0x0F), a
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
        ld a, #0xC1
        call 0xFF80             ; OAM DMA of the shadow OAM computed last frame
        call picture
        jr main

copy:
        ld a, (de)
        ld (hl+), a
        inc de
        dec bc
        ld a, b
        or c
        jr nz, copy
        ret

; picture: LCDC, scroll, window and the 40 objects for frame f = (0xC000), written in VBlank
picture:
        ld a, (0xC000)
        ld e, a                 ; E = f
        ld d, #0x82             ; LCD on, objects on
        and #0x0F
        cp #0x0F
        jr z, 1$
        set 0, d                ; BG and window enable
1$:
        bit 3, e
        jr z, 2$
        set 2, d                ; 8x16 objects
2$:
        bit 4, e
        jr nz, 3$
        set 4, d                ; tile data 0x8000 (unsigned)
3$:
        bit 2, e
        jr z, 4$
        set 5, d                ; window on
4$:
        bit 5, e
        jr z, 5$
        set 6, d                ; window map 0x9C00
5$:
        ld a, d
        ldh (0x40), a
        ld (0xC002), a
        ld a, e
        and #7
        ld hl, #wx_table
        call index
        ldh (0x4B), a
        ld (0xC003), a
        ld a, e
        rrca
        rrca
        rrca
        and #7
        ld hl, #wy_table
        call index
        ldh (0x4A), a
        ld (0xC004), a
        ld a, e
        ldh (0x43), a           ; SCX = f
        add a, a
        add a, e
        ldh (0x42), a           ; SCY = 3f

        ; the objects into the shadow OAM at 0xC100 (copied by OAM DMA after the next VBlank)
        ; objects 0-11: Y 56, X = 8 + 4i + (f & 3); object 0 at X 0 on odd frames
        ld hl, #0xC100
        ld a, e
        and #3
        add a, #8
        ld c, a                 ; X
        ld b, #0                ; i
6$:
        ld a, #56
        ld (hl+), a
        ld a, b
        or a
        jr nz, 7$
        bit 0, e
        jr z, 7$
        xor a
        jr 8$
7$:
        ld a, c
8$:
        ld (hl+), a
        ld a, b
        and #3
        add a, #4               ; tiles 4-7
        ld (hl+), a
        ld a, b
        and #1
        swap a                  ; OBP1 on odd objects (bit 4)
        ld (hl+), a
        ld a, c
        add a, #4
        ld c, a
        inc b
        ld a, b
        cp #12
        jr nz, 6$
        ; objects 12-15: all at (Y 96, X 60 + f % 8), different tiles and palettes
        ld a, e
        and #7
        add a, #60
        ld c, a
        ld b, #0
9$:
        ld a, #96
        ld (hl+), a
        ld a, c
        ld (hl+), a
        ld a, b
        add a, #4
        ld (hl+), a
        ld a, b
        swap a
        and #0x10
        ld (hl+), a
        inc b
        ld a, b
        cp #4
        jr nz, 9$
        ; objects 16-23: a row at Y 120, X = 20 + 12i - (f & 7); behind BG on even objects,
        ; flips from f, OBP1 when bit 1 of f
        ld b, #0
10$:
        ld a, #120
        ld (hl+), a
        ld a, b
        add a, a
        add a, b
        add a, a
        add a, a                ; 12i
        add a, #20
        ld c, a
        ld a, e
        and #7
        cpl
        inc a
        add a, c
        ld (hl+), a
        ld a, b
        and #3
        add a, #4
        ld (hl+), a
        ld a, e
        rlca
        rlca
        rlca
        rlca
        and #0x70               ; f bits 0-2 -> Y flip (6), X flip (5), OBP1 (4)
        ld c, a
        ld a, b
        and #1
        jr nz, 11$
        set 7, c                ; behind BG
11$:
        ld a, c
        ld (hl+), a
        inc b
        ld a, b
        cp #8
        jr nz, 10$
        ; objects 24-39: Y = f + 23i, X = 2f + 9i, tile i & 7, attributes (16i + f) & 0xF0
        ld d, e                 ; Y
        ld a, e
        add a, a
        ld (0xC005), a          ; X
        ld b, #0
12$:
        ld a, d
        ld (hl+), a
        add a, #23
        ld d, a
        ld a, (0xC005)
        ld (hl+), a
        add a, #9
        ld (0xC005), a
        ld a, b
        and #7
        ld (hl+), a
        ld a, b
        swap a
        add a, e
        and #0xF0
        ld (hl+), a
        inc b
        ld a, b
        cp #16
        jr nz, 12$
        ret

; index: A = (HL + A)
index:
        add a, l
        ld l, a
        jr nc, 1$
        inc h
1$:
        ld a, (hl)
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
        ldh a, (0x40)
        xor #0x20
        ldh (0x40), a
        ldh a, (0x43)
        add a, #13
        ldh (0x43), a
        ldh a, (0x4B)
        xor #0x10
        ldh (0x4B), a
        pop af
        reti

dma_routine:                    ; A = source page: start OAM DMA, wait its 160 cycles out
        ldh (0x46), a
        ld a, #40
1$:
        dec a
        jr nz, 1$
        ret
dma_routine_end:

wx_table:
        .db 0, 6, 7, 8, 80, 159, 166, 167
wy_table:
        .db 0, 1, 40, 100, 143, 144, 0, 20

tiles:  ; 0 blank, 1 colour 1, 2 stripes 0/2, 3 checker 3/0, 4-7 objects
        .db 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00
        .db 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00
        .db 0xFF, 0x00, 0xFF, 0x00, 0xFF, 0x00, 0xFF, 0x00
        .db 0xFF, 0x00, 0xFF, 0x00, 0xFF, 0x00, 0xFF, 0x00
        .db 0x00, 0xCC, 0x00, 0xCC, 0x00, 0xCC, 0x00, 0xCC
        .db 0x00, 0xCC, 0x00, 0xCC, 0x00, 0xCC, 0x00, 0xCC
        .db 0xAA, 0xAA, 0x55, 0x55, 0xAA, 0xAA, 0x55, 0x55
        .db 0xAA, 0xAA, 0x55, 0x55, 0xAA, 0xAA, 0x55, 0x55
        .db 0xFF, 0xFF, 0x81, 0xFF, 0x81, 0xBD, 0x81, 0xA5
        .db 0x81, 0xA5, 0x81, 0xBD, 0x81, 0xFF, 0xFF, 0xFF
        .db 0x80, 0x80, 0x40, 0x40, 0x20, 0x20, 0x10, 0x10
        .db 0x08, 0x08, 0x04, 0x04, 0x02, 0x02, 0x01, 0x01
        .db 0x00, 0xFF, 0x00, 0x00, 0x00, 0xFF, 0x00, 0x00
        .db 0x00, 0xFF, 0x00, 0x00, 0x00, 0xFF, 0x00, 0x00
        .db 0x88, 0x00, 0x88, 0x00, 0x88, 0x00, 0x88, 0x00
        .db 0x88, 0x00, 0x88, 0x00, 0x88, 0x00, 0x88, 0x00
tiles_signed:  ; 0 colour 2, 1 checker 1/0, 2 colour 3, 3 horizontal stripes 0/1
        .db 0x00, 0xFF, 0x00, 0xFF, 0x00, 0xFF, 0x00, 0xFF
        .db 0x00, 0xFF, 0x00, 0xFF, 0x00, 0xFF, 0x00, 0xFF
        .db 0xAA, 0x00, 0x55, 0x00, 0xAA, 0x00, 0x55, 0x00
        .db 0xAA, 0x00, 0x55, 0x00, 0xAA, 0x00, 0x55, 0x00
        .db 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF
        .db 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF
        .db 0xFF, 0x00, 0x00, 0x00, 0xFF, 0x00, 0x00, 0x00
        .db 0xFF, 0x00, 0x00, 0x00, 0xFF, 0x00, 0x00, 0x00
