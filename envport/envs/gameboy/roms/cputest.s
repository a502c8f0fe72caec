; cputest.s - envport's CPU instruction test ROM (no MBC, 32 KiB). Licence: MIT, as envport.
;
; Runs table-driven tests and reports through WRAM (the equivalence tests compare all of WRAM,
; HRAM and the I/O registers with PyBoy's every frame; the figures below are what to look at):
;   0xC000        frame counter (VBlank interrupt handler)
;   0xC001        stage: 1 ALU tests running, 2 timer/interrupt tests, 3 HALT tests, 0xFF done
;   0xC002-C003   loop counter of the final busy loop (16 bit, little-endian)
;   0xC004        timer interrupts counted, 0xC005 STAT interrupts counted
;   0xC010-       one 16-bit checksum (s1, s2; s2 rotated each step) per entry of `ops`: over every A input
;                 (0-255), every operand in `operands` (in B) and the F inputs 00 10 60 F0,
;                 the A and F each instruction leaves
;   0xC200-C2FF   DIV and LY sampled after each wake-up from HALT (pairs)
;   0xC300-C3FF   16-bit tests: ADD HL,rr / ADD SP,e / LD HL,SP+e results with flags
; WRAM 0xD000-D003 holds the instruction under test (op, op2, ret); 0xD010-D011 the checksum.
        .module cputest
        .area _HEADER (ABS)

        .org 0x40
        jp vblank
        .org 0x48
        jp stat_isr
        .org 0x50
        jp timer_isr

        .org 0x100
        nop
        jp start

        .org 0x150
start:
        di
        ld sp, #0xDFF0
        ld a, #1
        ld (0xC001), a
        xor a
        ldh (0x0F), a           ; IF = 0
        ld a, #0x01
        ldh (0xFF), a           ; IE = VBlank: interrupts land at varying points of the tests
        ei

        ; ---- stage 1: every entry of `ops` over all inputs
        ld hl, #ops
        ld de, #0xC010
next_op:
        ld a, (hl+)
        cp #0xFF                ; end of table (0xFF, RST 38, is never tested)
        jr z, ops_done
        ld (0xD000), a
        ld a, (hl+)
        ld (0xD001), a
        ld a, #0xC9             ; ret
        ld (0xD002), a
        push hl
        push de
        call test_op
        pop de
        ld a, c
        ld (de), a
        inc de
        ld a, b
        ld (de), a
        inc de
        pop hl
        jr next_op
ops_done:

        ; ---- 16-bit arithmetic (results and flags into 0xC300-)
        ld hl, #0xC300
        ld de, #words
w_loop:
        ld a, (de)
        ld c, a
        inc de
        ld a, (de)
        ld b, a                 ; BC = next word
        inc de
        or c
        jr z, w_done            ; table ends with 0x0000
        push hl
        ld h, b
        ld l, c
        add hl, bc              ; HL = 2*BC, flags H and C
        push af
        ld a, l
        ld (0xD020), a
        ld a, h
        ld (0xD021), a
        pop bc                  ; C = F after ADD HL,BC
        pop hl
        ld a, (0xD020)
        ld (hl+), a
        ld a, (0xD021)
        ld (hl+), a
        ld a, c
        ld (hl+), a
        jr w_loop
w_done:
        ; ADD SP,e and LD HL,SP+e for SP in (0xC0FF, 0xDF0F, 0xDFF8) and e in (+1, -1, +0x7F, -0x80)
        ld (0xD022), sp         ; keep the real SP
        ld bc, #0xC380
        ld sp, #0xC0FF
        call sp_tests
        ld sp, #0xDF0F
        call sp_tests_nocall
        ld sp, #0xDFF8
        call sp_tests_nocall
        ld hl, #0xD022
        ld a, (hl+)
        ld h, (hl)
        ld l, a
        ld sp, hl

        ; ---- stage 2: timer and STAT interrupts while the CPU is busy
        ld a, #2
        ld (0xC001), a
        di
        ld a, #0xF0
        ldh (0x06), a           ; TMA
        ldh (0x05), a           ; TIMA
        ld a, #0x05
        ldh (0x07), a           ; TAC: on, 262144 Hz
        ld a, #0x40
        ldh (0x41), a           ; STAT: LYC=LY interrupt
        ld a, #0x50
        ldh (0x45), a           ; LYC
        xor a
        ldh (0x0F), a
        ld a, #0x07
        ldh (0xFF), a           ; IE = VBlank, STAT, timer
        ei
        ld bc, #0x3000
busy:
        dec bc
        ld a, b
        or c
        jr nz, busy

        ; ---- stage 3: HALT until an interrupt, sample DIV and LY after each wake-up
        ld a, #3
        ld (0xC001), a
        ld a, #0x04
        ldh (0x07), a           ; TAC: on, 4096 Hz
        ld hl, #0xC200
        ld b, #128
halt_loop:
        halt
        nop
        ldh a, (0x04)
        ld (hl+), a
        ldh a, (0x44)
        ld (hl+), a
        dec b
        jr nz, halt_loop

        ; HALT with IME off and an interrupt pending: the CPU carries on without dispatching
        di
        ld a, #0x05
        ldh (0x07), a
        halt
        nop
        ldh a, (0x05)
        ld (0xC006), a
        ei

        ld a, #0xFF
        ld (0xC001), a
done:                           ; busy to the end: a 16-bit counter
        ld hl, #0xC002
        inc (hl)
        jr nz, done
        inc hl
        inc (hl)
        jr done

; test_op: the checksum of the instruction at 0xD000 over all inputs, in BC (C = s1, B = s2)
test_op:
        xor a
        ld (0xD010), a
        ld (0xD011), a
        ld d, #0                ; A input
a_loop:
        ld hl, #operands
b_loop:
        ld b, (hl)
        inc hl
        push hl
        ld e, #0x00
        call one
        ld e, #0x10
        call one
        ld e, #0x60
        call one
        ld e, #0xF0
        call one
        pop hl
        ld a, l
        cp #<operands_end
        jr nz, b_loop
        inc d
        jr nz, a_loop
        ld a, (0xD010)
        ld c, a
        ld a, (0xD011)
        ld b, a
        ret

; one: A = D, F = E, run the instruction (it may use B), fold the A and F it leaves
one:
        push de
        pop af
        call 0xD000
        push af
        pop hl                  ; H = A, L = F
        ld a, (0xD010)
        add a, h
        ld c, a
        ld a, (0xD011)
        rlca                    ; the rotation keeps sums over full input ranges from cancelling
        add a, c
        ld (0xD011), a
        ld a, c
        add a, l
        ld (0xD010), a
        ld c, a
        ld a, (0xD011)
        rlca
        add a, c
        ld (0xD011), a
        ret

; sp_tests: four ADD SP,e and LD HL,SP+e results at (BC) onwards, SP restored after each
sp_tests:
sp_tests_nocall:
        ld hl, #0
        add hl, sp
        ld d, h
        ld e, l                 ; DE = SP under test
        ldhl sp, #1
        call store_hl_f
        ldhl sp, #-1
        call store_hl_f
        ldhl sp, #127
        call store_hl_f
        ldhl sp, #-128
        call store_hl_f
        add sp, #-128
        ld hl, #0
        add hl, sp
        call store_hl_f
        ld h, d
        ld l, e
        ld sp, hl
        ret

; store_hl_f: HL and F (as left by the instruction before the call) at (BC), BC += 3. Uses the
; stack below the SP under test (in WRAM for the values used).
store_hl_f:
        push af
        ld a, l
        ld (bc), a
        inc bc
        ld a, h
        ld (bc), a
        inc bc
        pop af
        push af
        push hl
        ldhl sp, #2
        ld a, (hl)              ; F as pushed
        ld (bc), a
        inc bc
        pop hl
        pop af
        ret

vblank:
        push af
        ld a, (0xC000)
        inc a
        ld (0xC000), a
        pop af
        reti

timer_isr:
        push af
        ld a, (0xC004)
        inc a
        ld (0xC004), a
        pop af
        reti

stat_isr:
        push af
        ld a, (0xC005)
        inc a
        ld (0xC005), a
        pop af
        reti

        .org 0x1000
operands:
        .db 0x00, 0x01, 0x0F, 0x10, 0x80, 0xFF
operands_end:

words:
        .dw 0x0001, 0x0FFF, 0x7FFF, 0x8000, 0xFFFF, 0x0800, 0x1234, 0x8888
        .dw 0x0000

; instruction under test: two bytes (one-byte instructions are followed by a nop)
ops:
        .db 0x80, 0x00          ; add a, b
        .db 0x88, 0x00          ; adc a, b
        .db 0x90, 0x00          ; sub a, b
        .db 0x98, 0x00          ; sbc a, b
        .db 0xA0, 0x00          ; and a, b
        .db 0xA8, 0x00          ; xor a, b
        .db 0xB0, 0x00          ; or a, b
        .db 0xB8, 0x00          ; cp a, b
        .db 0x87, 0x00          ; add a, a
        .db 0x8F, 0x00          ; adc a, a
        .db 0x9F, 0x00          ; sbc a, a
        .db 0xC6, 0x5A          ; add a, #0x5A
        .db 0xCE, 0xA5          ; adc a, #0xA5
        .db 0xD6, 0x3C          ; sub a, #0x3C
        .db 0xDE, 0xC3          ; sbc a, #0xC3
        .db 0xE6, 0x0F          ; and a, #0x0F
        .db 0xEE, 0xF0          ; xor a, #0xF0
        .db 0xF6, 0x81          ; or a, #0x81
        .db 0xFE, 0x7F          ; cp a, #0x7F
        .db 0x27, 0x00          ; daa
        .db 0x2F, 0x00          ; cpl
        .db 0x37, 0x00          ; scf
        .db 0x3F, 0x00          ; ccf
        .db 0x07, 0x00          ; rlca
        .db 0x0F, 0x00          ; rrca
        .db 0x17, 0x00          ; rla
        .db 0x1F, 0x00          ; rra
        .db 0x3C, 0x00          ; inc a
        .db 0x3D, 0x00          ; dec a
        .db 0x78, 0x00          ; ld a, b
        .db 0xCB, 0x07          ; rlc a
        .db 0xCB, 0x0F          ; rrc a
        .db 0xCB, 0x17          ; rl a
        .db 0xCB, 0x1F          ; rr a
        .db 0xCB, 0x27          ; sla a
        .db 0xCB, 0x2F          ; sra a
        .db 0xCB, 0x37          ; swap a
        .db 0xCB, 0x3F          ; srl a
        .db 0xCB, 0x47          ; bit 0, a
        .db 0xCB, 0x7F          ; bit 7, a
        .db 0xCB, 0x58          ; bit 3, b
        .db 0xCB, 0x87          ; res 0, a
        .db 0xCB, 0xFF          ; set 7, a
        .db 0xFF
