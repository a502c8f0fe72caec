; mbc1m.s - the large-MBC1 ROM of roms/mbc1big.inc, as an MBC1M multicart. Licence: MIT, as
; envport.
MULTICART = 1
        .include "mbc1big.inc"
