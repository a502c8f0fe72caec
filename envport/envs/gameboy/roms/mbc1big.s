; mbc1big.s - the large-MBC1 ROM of roms/mbc1big.inc, as a plain MBC1. Licence: MIT, as envport.
MULTICART = 0
        .include "mbc1big.inc"
