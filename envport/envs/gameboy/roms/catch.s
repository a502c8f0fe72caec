; catch.s - "Catch", envport's own Game Boy game (no MBC, 32 KiB).
; Licence: MIT, as the rest of envport (the project wrote this source; no code of anyone else's).
;
; A fruit falls from the top of the screen at a random column; the player moves a paddle
; (two 8x8 objects) along the bottom with Left/Right (A held: twice as fast) and catches it:
; +1 score. A fruit that reaches the paddle's line uncaught costs a life; the game is over when
; the three lives are gone. The fall speed rises with the score (1 px/frame, +1 every 8
; points, at most 3). Until Start is pressed the title screen advances a 16-bit Galois LFSR
; once a frame, and the press mixes DIV into it: the frames a player waits pick the fruit
; columns, so episodes differ by their inputs.
;
; WRAM (fixed addresses, read by the RL environment):
;   0xC000 frame counter (VBlank handler)     0xC001 joypad, 1 = pressed (bit7 Down, 6 Up,
;   0xC002 phase: 0 title, 1 playing, 2 over          5 Left, 4 Right, 3 Start, 2 Select, 1 B, 0 A)
;   0xC003 game-over flag (1 once over)       0xC004 score (binary, stops at 255)
;   0xC005 lives                              0xC006 paddle x (OAM coordinates, 8..144)
;   0xC007 fruit x (OAM coordinates)          0xC008 fruit y (OAM coordinates)
;   0xC009 fall speed (px/frame)              0xC00A-0xC00B LFSR (low, high)
;   0xC00C lives shown on screen (redrawn when it differs from 0xC005)
; Screen: BG tiles (a sky of dots, a brick ground on row 17, one block per life on row 0),
; objects 0-1 the paddle, object 2 the fruit.
        .module catch
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
        ldh a, (0x44)
        cp #144
        jr c, wait_vbl
        xor a
        ldh (0x40), a           ; LCD off

        ld hl, #0x8000          ; tiles 0-5 from the table below (6 x 16 bytes)
        ld de, #tiles
        ld b, #96
copy_tiles:
        ld a, (de)
        ld (hl+), a
        inc de
        dec b
        jr nz, copy_tiles

        ld hl, #0x9800          ; BG map: sky (tile 3 on every 4th cell of even rows, else 0)
        ld bc, #0x0400
fill_map:
        ld a, l
        and #0x23               ; column multiple of 4 on an even row: l & 0x23 == 0
        jr nz, sky_blank
        ld a, #3
        jr sky_put
sky_blank:
        xor a
sky_put:
        ld (hl+), a
        dec bc
        ld a, b
        or c
        jr nz, fill_map

        ld hl, #0x9A20          ; row 17: the brick ground (tile 1), 20 columns
        ld b, #20
        ld a, #1
fill_ground:
        ld (hl+), a
        dec b
        jr nz, fill_ground

        ld hl, #0xFE00          ; OAM: every object off screen (y = 0)
        ld b, #160
        xor a
clear_oam:
        ld (hl+), a
        dec b
        jr nz, clear_oam

        ld hl, #0xC000          ; WRAM variables 0xC000-0xC00F = 0
        ld b, #16
        xor a
clear_vars:
        ld (hl+), a
        dec b
        jr nz, clear_vars
        ld a, #0xE1             ; LFSR seed (never 0)
        ld (0xC00A), a
        ld a, #0xAC
        ld (0xC00B), a

        xor a
        ldh (0x42), a           ; SCY
        ldh (0x43), a           ; SCX
        ldh (0x0F), a           ; IF
        ld a, #0xE4
        ldh (0x47), a           ; BGP
        ldh (0x48), a           ; OBP0
        ld a, #0x93
        ldh (0x40), a           ; LCD on, tiles at 0x8000, objects on, BG on
        ld a, #0x01
        ldh (0xFF), a           ; IE = VBlank
        ei

main:
        halt
        nop
        call draw               ; in VBlank: OAM and the lives row
        call read_joypad
        ld a, (0xC002)
        or a
        jr z, title
        dec a
        jr z, play
        jr main                 ; game over: nothing moves

title:
        call lfsr
        ld a, (0xC001)
        bit 3, a                ; Start
        jr z, main
        ldh a, (0x04)           ; DIV
        ld b, a
        ld a, (0xC00A)
        xor b
        ld (0xC00A), a
        ld b, a
        ld a, (0xC00B)
        or b
        jr nz, seeded
        ld a, #1                ; the LFSR must not be 0
        ld (0xC00A), a
seeded:
        ld a, #3
        ld (0xC005), a          ; lives
        ld a, #1
        ld (0xC009), a          ; speed
        ld (0xC002), a          ; playing
        ld a, #76
        ld (0xC006), a          ; paddle in the middle
        call spawn
        jr main

play:
        ld a, (0xC001)
        ld c, #2                ; step: 2 px, 4 with A held
        bit 0, a
        jr z, step_set
        ld c, #4
step_set:
        ld b, a
        ld a, (0xC006)
        bit 5, b                ; Left
        jr z, no_left
        sub c
        cp #8
        jr nc, no_left
        ld a, #8
no_left:
        bit 4, b                ; Right
        jr z, no_right
        add a, c
        cp #145
        jr c, no_right
        ld a, #144
no_right:
        ld (0xC006), a

        ld a, (0xC009)          ; the fruit falls
        ld b, a
        ld a, (0xC008)
        add a, b
        ld (0xC008), a
        cp #140                 ; the paddle's line (its top at OAM y 144, the fruit 8 high)
        jp c, main
        ld a, (0xC006)          ; caught when fruit_x + 8 > paddle_x and fruit_x < paddle_x + 16
        ld b, a
        ld a, (0xC007)
        add a, #8
        cp b
        jr c, missed
        jr z, missed
        sub #8
        ld c, a
        ld a, b
        add a, #16
        cp c
        jr c, missed
        jr z, missed
        ld a, (0xC004)          ; caught: score + 1 (stops at 255)
        inc a
        jr z, score_max
        ld (0xC004), a
score_max:
        ld a, (0xC004)          ; speed = 1 + score / 8, at most 3
        srl a
        srl a
        srl a
        inc a
        cp #4
        jr c, speed_set
        ld a, #3
speed_set:
        ld (0xC009), a
        call spawn
        jp main
missed:
        ld a, (0xC005)
        dec a
        ld (0xC005), a
        jr z, over
        call spawn
        jp main
over:
        ld a, #2
        ld (0xC002), a
        ld a, #1
        ld (0xC003), a
        xor a
        ld (0xC008), a          ; the fruit leaves the screen
        jp main

; A new fruit at the top, at a column drawn from the LFSR: x = 8 + (low & 0x7F) + (high & 0x0F).
spawn:
        call lfsr
        ld a, (0xC00B)
        and #0x0F
        ld b, a
        ld a, (0xC00A)
        and #0x7F
        add a, b
        add a, #8
        ld (0xC007), a
        ld a, #24
        ld (0xC008), a
        ret

; 16-bit Galois LFSR (taps 0xB400): shift right, XOR the taps when a 1 falls out.
lfsr:
        ld a, (0xC00B)
        srl a
        ld h, a
        ld a, (0xC00A)
        rra
        ld l, a
        jr nc, lfsr_store
        ld a, h
        xor #0xB4
        ld h, a
lfsr_store:
        ld a, l
        ld (0xC00A), a
        ld a, h
        ld (0xC00B), a
        ret

; Objects from the variables, and the lives row when it changed (runs right after VBlank).
draw:
        ld hl, #0xFE00
        ld a, (0xC002)
        or a
        jr z, draw_hidden       ; title: the paddle is not shown yet
        ld a, (0xC006)
        ld b, a
        ld a, #144              ; paddle, left half
        ld (hl+), a
        ld a, b
        ld (hl+), a
        ld a, #4
        ld (hl+), a
        xor a
        ld (hl+), a
        ld a, #144              ; paddle, right half (mirrored)
        ld (hl+), a
        ld a, b
        add a, #8
        ld (hl+), a
        ld a, #4
        ld (hl+), a
        ld a, #0x20             ; X flip
        ld (hl+), a
        ld a, (0xC008)          ; the fruit
        ld (hl+), a
        ld a, (0xC007)
        ld (hl+), a
        ld a, #5
        ld (hl+), a
        xor a
        ld (hl+), a
        jr draw_lives
draw_hidden:
        xor a
        ld b, #12
hide_loop:
        ld (hl+), a
        dec b
        jr nz, hide_loop
draw_lives:
        ld a, (0xC005)
        ld b, a
        ld a, (0xC00C)
        cp b
        ret z
        ld a, b
        ld (0xC00C), a
        ld hl, #0x9800          ; row 0, columns 0-2: tile 2 per life left, else sky blank
        ld c, #3
lives_loop:
        xor a
        cp b
        jr z, life_gone
        dec b
        ld a, #2
        jr life_put
life_gone:
        xor a
life_put:
        ld (hl+), a
        dec c
        jr nz, lives_loop
        ret

; The joypad into 0xC001 (1 = pressed), as hello.s.
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
        ld (0xC001), a
        ld a, #0x30
        ldh (0x00), a
        ret

vblank:
        push af
        ld a, (0xC000)
        inc a
        ld (0xC000), a
        pop af
        reti

; 2 bits per pixel, 8 rows of (low plane, high plane) per tile.
tiles:
        .db 0x00,0x00, 0x00,0x00, 0x00,0x00, 0x00,0x00      ; 0: blank sky
        .db 0x00,0x00, 0x00,0x00, 0x00,0x00, 0x00,0x00
        .db 0xFF,0xFF, 0x10,0xEF, 0x10,0xEF, 0xFF,0xFF      ; 1: bricks
        .db 0x01,0xFE, 0x01,0xFE, 0x01,0xFE, 0xFF,0xFF
        .db 0x00,0x00, 0x7E,0x7E, 0x7E,0x7E, 0x7E,0x7E      ; 2: a life block
        .db 0x7E,0x7E, 0x7E,0x7E, 0x7E,0x7E, 0x00,0x00
        .db 0x00,0x00, 0x00,0x00, 0x00,0x00, 0x18,0x00      ; 3: a dot of sky
        .db 0x18,0x00, 0x00,0x00, 0x00,0x00, 0x00,0x00
        .db 0x00,0x00, 0x00,0x00, 0x7F,0x7F, 0xFF,0x80      ; 4: paddle, left half
        .db 0xFF,0x80, 0x7F,0x7F, 0x00,0x00, 0x00,0x00
        .db 0x18,0x18, 0x3C,0x24, 0x7E,0x42, 0xFF,0x81      ; 5: the fruit
        .db 0xFF,0x81, 0x7E,0x42, 0x3C,0x24, 0x18,0x18
