; boot.s - envport's 256-byte DMG boot ROM (licence: MIT, as the rest of envport).
; Sets the documented post-boot DMG registers (A=01 F=B0 BC=0013 DE=00D8 HL=014D SP=FFFE,
; LCDC=0x91, BGP=0xFC) and unmaps itself by writing 1 to 0xFF50 at 0x00FE, so that the next
; instruction is the cartridge's at 0x0100. Built without a header: makebin -s 256.
        .module boot
        .area _HEADER (ABS)
        .org 0x0000
        ld sp, #0xFFFE
        ld a, #0xFC
        ldh (0x47), a           ; BGP
        ld a, #0x91
        ldh (0x40), a           ; LCDC: LCD on, BG on
        ld hl, #0x01B0
        push hl
        pop af                  ; A = 0x01, F = 0xB0
        ld bc, #0x0013
        ld de, #0x00D8
        ld hl, #0x014D
        jp 0x00FE
        .org 0x00FE
        ldh (0x50), a           ; A = 1: unmap the boot ROM; next PC = 0x0100
