; idle.s - host ROM for instruction tests (no MBC, 32 KiB). Licence: MIT, as envport.
; Spins with interrupts off. A test writes code into WRAM, points PC at it and ends the code
; with `jp 0x0200`, the park loop; 0x0210 is a second loop (the target of taken jumps, calls
; and returns in those tests). Each RST vector holds a loop of its own (`jr .`), so that PC
; tells which vector an RST reached.
        .module idle
        .area _HEADER (ABS)
        .org 0x00
        jr .
        .org 0x08
        jr .
        .org 0x10
        jr .
        .org 0x18
        jr .
        .org 0x20
        jr .
        .org 0x28
        jr .
        .org 0x30
        jr .
        .org 0x38
        jr .
        .org 0x100
        nop
        jp start
        .org 0x150
start:
        di
        ld sp, #0xDFF0
        xor a
        ldh (0xFF), a           ; IE = 0
spin:
        jr spin
        .org 0x200
park:
        jr park
        .org 0x210
rest:
        jr rest
