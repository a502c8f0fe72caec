; stat.s - envport's STAT-interrupt and LYC-timing conformance ROM (no MBC, 32 KiB).
; Licence: MIT, as envport (the project's own source).
;
; TIMA runs at 262144 Hz (a tick every 16 cycles) with TMA = 0 as a fine clock. Every frame the
; main loop (woken by VBlank) picks the next entry of `configs`: the STAT sources enabled
; (HBlank 0x08, VBlank 0x10, OAM 0x20, LYC 0x40, alone and combined) and a LYC value, and
; whether the STAT handler moves LYC on by `step` lines after each LYC match (several LYC
; interrupts a frame, LYC written while LY = LYC). The STAT handler counts its calls and folds
; (LY, STAT, TIMA) into a checksum, logging the last 64. Between frames the main loop also polls
; with interrupts off: the TIMA values at which STAT's mode bits change over one line, and
; at which the coincidence flag rises for a LYC set ahead of LY.
;
; WRAM:
;   0xC000-C001 frame counter (VBlank handler)   0xC002-C003 STAT interrupts (16 bit)
;   0xC004 config index                          0xC005 STAT checksum s1, 0xC006 s2
;   0xC007 the log's next entry (low byte)       0xC008 VBlank flag (handler sets, main clears)
;   0xC009 LYC step of the current config
;   0xC010-C01F polled: TIMA and STAT at each of 8 mode changes (pairs)
;   0xC020-C021 polled: LY and TIMA when the coincidence flag rose
;   0xC100-C1FF log: (LY, STAT, TIMA, frame low) per STAT interrupt, 64 entries, wrapping
        .module stat
n_configs = 16
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
        ld hl, #0xC000
        ld bc, #0x0200
clear_wram:
        xor a
        ld (hl+), a
        dec bc
        ld a, b
        or c
        jr nz, clear_wram
        xor a
        ldh (0x06), a           ; TMA = 0
        ld a, #0x05
        ldh (0x07), a           ; TAC: on, 262144 Hz
        ld a, #0xE4
        ldh (0x47), a
        xor a
        ldh (0x0F), a
        ld a, #0x03
        ldh (0xFF), a           ; IE = VBlank | STAT
        ei

main:
        halt
        nop
        ld a, (0xC008)
        or a
        jr z, main
        xor a
        ld (0xC008), a
        ; -- the next config: STAT enables, LYC, LYC step
        ld a, (0xC004)
        inc a
        cp #n_configs
        jr c, 1$
        xor a
1$:
        ld (0xC004), a
        ld l, a
        ld h, #0
        add hl, hl
        add hl, hl              ; 4 bytes an entry
        ld de, #configs
        add hl, de
        ld a, (hl+)
        ldh (0x41), a           ; STAT enables
        ld a, (hl+)
        ldh (0x45), a           ; LYC
        ld a, (hl+)
        ld (0xC009), a          ; LYC step in the handler (0: LYC stays)
        ld a, (hl)
        or a
        jr z, main              ; polling only in configs that ask for it
        ; -- poll with IME off: 8 mode changes from here (TIMA, STAT at each)
        di
        ld hl, #0xC010
        ld c, #8
        ldh a, (0x41)
        and #3
        ld b, a
2$:
        ldh a, (0x41)
        and #3
        cp b
        jr z, 2$
        ld b, a
        ldh a, (0x05)
        ld (hl+), a
        ldh a, (0x41)
        ld (hl+), a
        dec c
        jr nz, 2$
        ; -- LYC set 3 lines ahead: when does the coincidence flag rise?
        ldh a, (0x44)
        add a, #3
        cp #154
        jr c, 3$
        sub a, #154
3$:
        ldh (0x45), a
4$:
        ldh a, (0x41)
        bit 2, a
        jr z, 4$
        ldh a, (0x44)
        ld (0xC020), a
        ldh a, (0x05)
        ld (0xC021), a
        xor a
        ldh (0x0F), a           ; drop what the polling raised (as a game that polls would)
        ei
        jr main

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
        ld (0xC008), a
        pop hl
        pop af
        reti

stat_isr:                       ; STAT, LY and TIMA first, as close to the dispatch as possible
        push af
        push bc
        ldh a, (0x41)
        ld b, a
        ldh a, (0x44)
        ld c, a
        ldh a, (0x05)
        push de
        push hl
        ld d, a                 ; D = TIMA
        ld hl, #0xC002
        inc (hl)
        jr nz, 1$
        inc hl
        inc (hl)
1$:
        ld a, (0xC007)
        ld l, a
        ld h, #0xC1
        ld (hl), c              ; LY
        inc hl
        ld (hl), b              ; STAT
        inc hl
        ld (hl), d              ; TIMA
        inc hl
        ld a, (0xC000)
        ld (hl+), a
        ld a, l
        ld (0xC007), a
        ; checksum: s1 += LY ^ TIMA, s2 = rlc(s2) + s1
        ld a, c
        xor d
        ld b, a
        ld a, (0xC005)
        add a, b
        ld (0xC005), a
        ld b, a
        ld a, (0xC006)
        rlca
        add a, b
        ld (0xC006), a
        ; LYC moved on after a match, where the config says so
        ld a, (0xC009)
        or a
        jr z, 3$
        ld b, a
        ldh a, (0x41)
        bit 2, a
        jr z, 3$
        ldh a, (0x45)
        add a, b
        cp #154
        jr c, 2$
        sub a, #154
2$:
        ldh (0x45), a
3$:
        pop hl
        pop de
        pop bc
        pop af
        reti

; configs: STAT enables, LYC, LYC step, poll (non-zero: the main loop polls after it)
configs:
        .db 0x40, 0x00, 0, 0    ; LYC = 0 (the line after VBlank's last)
        .db 0x40, 0x50, 0, 1
        .db 0x40, 0x90, 0, 0    ; LYC = 144: with VBlank's start
        .db 0x40, 0x99, 0, 0    ; LYC = 153: the short last line
        .db 0x40, 0x10, 7, 0    ; LYC moved on 7 lines after each match
        .db 0x40, 0x20, 40, 1
        .db 0x08, 0x00, 0, 0    ; HBlank
        .db 0x10, 0x00, 0, 1    ; VBlank
        .db 0x20, 0x00, 0, 0    ; OAM (mode 2)
        .db 0x28, 0x00, 0, 0    ; HBlank and OAM: one line of STAT stays high?
        .db 0x48, 0x30, 0, 1    ; HBlank and LYC
        .db 0x60, 0x40, 0, 0    ; OAM and LYC
        .db 0x30, 0x00, 0, 0    ; VBlank and OAM
        .db 0x78, 0x70, 5, 1    ; everything, LYC moving
        .db 0x00, 0x00, 0, 1    ; nothing
        .db 0x50, 0x8F, 0, 0    ; VBlank and LYC = 143
