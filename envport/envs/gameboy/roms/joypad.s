; joypad.s - envport's joypad-interrupt conformance ROM (no MBC, 32 KiB). Licence: MIT, as
; envport (the project's own source).
;
; IE = VBlank | joypad. Each frame the main loop reads both button groups into 0xC001, then
; selects the lines the next frame's presses can interrupt on, in turn: none (P1 = 0x30),
; directions (0x20), actions (0x10), both (0x00). The joypad handler counts the interrupts and
; logs when they came (frame, LY, DIV) and what P1 read then. The d-pad moves object 0 (a
; cursor) one pixel a frame; A held moves it two. After 768 frames the ROM sets its over flag
; (an episode's end for the environment) and carries on.
;
; WRAM:
;   0xC000-C001 frame counter (16 bit, little-endian; VBlank handler)
;   0xC002 joypad, 1 = pressed (bit7 Down, 6 Up, 5 Left, 4 Right, 3 Start, 2 Select, 1 B, 0 A)
;   0xC003 over flag (1 from frame 768 on)   0xC004 joypad interrupts (stops at 255)
;   0xC005 P1 select written for this frame  0xC006 P1 read in the last joypad interrupt
;   0xC007 LY at the last joypad interrupt   0xC008 DIV at the last joypad interrupt
;   0xC009 cursor x, 0xC00A cursor y (OAM coordinates)
;   0xC00B wake-ups from HALT by the joypad interrupt alone (no VBlank since the last one)
;   0xC00C VBlank seen flag (set by the VBlank handler, cleared by the main loop)
;   0xC00D the log's next entry (low byte of its address)
;   0xC100-C1FF log: (frame low, LY, P1, DIV) per joypad interrupt, 64 entries, wrapping
        .module joypad
        .area _HEADER (ABS)

        .org 0x40
        jp vblank
        .org 0x60
        jp joypad_isr

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

        ld hl, #0x8000          ; tile 0 blank, tile 1 a framed cursor
        ld de, #tiles
        ld b, #32
copy_tiles:
        ld a, (de)
        ld (hl+), a
        inc de
        dec b
        jr nz, copy_tiles
        ld hl, #0x9800          ; BG map: blank
        ld bc, #0x0400
clear_map:
        xor a
        ld (hl+), a
        dec bc
        ld a, b
        or c
        jr nz, clear_map
        ld hl, #0xFE00          ; OAM: everything off screen
        ld b, #160
clear_oam:
        xor a
        ld (hl+), a
        dec b
        jr nz, clear_oam
        ld hl, #0xC000          ; WRAM 0xC000-0xC1FF = 0
        ld bc, #0x0200
clear_wram:
        xor a
        ld (hl+), a
        dec bc
        ld a, b
        or c
        jr nz, clear_wram
        ld a, #80
        ld (0xC009), a
        ld a, #76
        ld (0xC00A), a

        ld a, #0xE4
        ldh (0x47), a           ; BGP
        ld a, #0xD2
        ldh (0x48), a           ; OBP0
        ld a, #0x30
        ldh (0x00), a           ; P1: nothing selected
        ld (0xC005), a
        xor a
        ldh (0x0F), a
        ld a, #0x93
        ldh (0x40), a           ; LCD on, tiles at 0x8000, objects on, BG on
        ld a, #0x11
        ldh (0xFF), a           ; IE = VBlank | joypad
        ei

main:
        halt
        nop
        ld a, (0xC00C)
        or a
        jr nz, frame
        ld hl, #0xC00B          ; woken by the joypad interrupt alone
        inc (hl)
        jr main
frame:
        xor a
        ld (0xC00C), a
        call read_joypad
        ; the lines the next frame's presses interrupt on: (frame & 3) -> 0x30 0x20 0x10 0x00
        ld a, (0xC000)
        and #3
        swap a
        cpl
        and #0x30
        ld (0xC005), a
        ldh (0x00), a
        call move_cursor
        ld a, (0xC001)          ; over from frame 768 (0x0300) on
        cp #3
        jr c, main
        ld a, #1
        ld (0xC003), a
        jr main

; read_joypad: both groups into 0xC002 (1 = pressed), as hello.s
read_joypad:
        ld a, #0x20
        ldh (0x00), a
        ldh a, (0x00)
        ldh a, (0x00)
        cpl
        and #0x0F
        swap a
        ld b, a
        ld a, #0x10
        ldh (0x00), a
        ldh a, (0x00)
        ldh a, (0x00)
        cpl
        and #0x0F
        or b
        ld (0xC002), a
        ret

; move_cursor: the d-pad moves the cursor 1 px (2 with A), clamped to 8..160 / 16..152
move_cursor:
        ld a, (0xC002)
        ld c, a
        ld b, #1
        bit 0, c
        jr z, 1$
        ld b, #2
1$:
        ld a, (0xC009)
        bit 4, c                ; right
        jr z, 2$
        add a, b
2$:
        bit 5, c                ; left
        jr z, 3$
        sub a, b
3$:
        cp #8
        jr nc, 4$
        ld a, #8
4$:
        cp #161
        jr c, 5$
        ld a, #160
5$:
        ld (0xC009), a
        ld a, (0xC00A)
        bit 7, c                ; down
        jr z, 6$
        add a, b
6$:
        bit 6, c                ; up
        jr z, 7$
        sub a, b
7$:
        cp #16
        jr nc, 8$
        ld a, #16
8$:
        cp #153
        jr c, 9$
        ld a, #152
9$:
        ld (0xC00A), a
        ret

vblank:
        push af
        push hl
        ld hl, #0xC000
        inc (hl)
        jr nz, 1$
        inc hl
        inc (hl)
1$:
        ld a, #1
        ld (0xC00C), a
        ld hl, #0xFE00          ; object 0: the cursor
        ld a, (0xC00A)
        ld (hl+), a
        ld a, (0xC009)
        ld (hl+), a
        ld a, #1
        ld (hl+), a
        xor a
        ld (hl), a
        pop hl
        pop af
        reti

joypad_isr:
        push af
        push hl
        ld a, (0xC004)
        inc a
        jr z, 1$                ; stops at 255
        ld (0xC004), a
1$:
        ldh a, (0x00)
        ld (0xC006), a
        ldh a, (0x44)
        ld (0xC007), a
        ldh a, (0x04)
        ld (0xC008), a
        ld a, (0xC00D)          ; log index (low byte of the entry's address)
        ld l, a
        ld h, #0xC1
        ld a, (0xC000)
        ld (hl+), a
        ld a, (0xC007)
        ld (hl+), a
        ld a, (0xC006)
        ld (hl+), a
        ld a, (0xC008)
        ld (hl+), a
        ld a, l
        ld (0xC00D), a
        pop hl
        pop af
        reti

tiles:
        .db 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00
        .db 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00
        .db 0xFF, 0xFF, 0x81, 0xFF, 0xBD, 0xC3, 0xA5, 0xC3
        .db 0xA5, 0xC3, 0xBD, 0xC3, 0x81, 0xFF, 0xFF, 0xFF
