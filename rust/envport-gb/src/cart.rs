//! Cartridges: ROM only (type 0x00, 0x08, 0x09) and MBC1 (0x01-0x03), with the bank arithmetic
//! PyBoy 2.8.1 applies (its observable behaviour is the reference, see the folder's README).

pub const ROM_BANK: usize = 0x4000;
pub const RAM_BANK: usize = 0x2000;
/// PyBoy always allocates 16 RAM banks, whatever the header says; reads past the header's count
/// wrap by the header's count (MBC1) or go to the allocated bank (ROM only).
pub const RAM_BANKS_ALLOCATED: usize = 16;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mbc {
    RomOnly,
    Mbc1,
}

#[derive(Clone)]
pub struct Cartridge {
    pub rom: Vec<u8>,
    pub mbc: Mbc,
    pub carttype: u8,
    pub sram: bool,
    pub battery: bool,
    pub rom_banks: usize,
    pub ram_banks: usize,
    pub ram: Vec<u8>,
    pub rombank_selected: usize,
    pub rombank_selected_low: usize,
    pub rambank_selected: usize,
    pub rambank_enabled: bool,
    pub memorymodel: u8,
    pub bank_select_register1: u8,
    pub bank_select_register2: u8,
    pub multicart: bool,
}

/// Why a ROM is refused, before any emulation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RomError {
    Empty,
    Size(usize),
    HeaderChecksum { stored: u8, computed: u8 },
    CartridgeType(u8),
    RamSize(u8),
}

impl std::fmt::Display for RomError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RomError::Empty => write!(f, "the ROM is empty"),
            RomError::Size(n) => {
                write!(
                    f,
                    "the ROM's size ({n} bytes) is not a multiple of 16 KiB (16384 bytes)"
                )
            }
            RomError::HeaderChecksum { stored, computed } => write!(
                f,
                "bad header checksum at 0x014D: stored 0x{stored:02X}, computed 0x{computed:02X}"
            ),
            RomError::CartridgeType(t) => write!(
                f,
                "unsupported cartridge type 0x{t:02X} at 0x0147 (supported: 0x00, 0x01, 0x02, \
                 0x03, 0x08, 0x09: ROM only and MBC1)"
            ),
            RomError::RamSize(r) => write!(f, "unknown RAM size code 0x{r:02X} at 0x0149"),
        }
    }
}

pub fn header_checksum(rom: &[u8]) -> u8 {
    let mut x: u8 = 0;
    for &b in &rom[0x134..0x14D] {
        x = x.wrapping_sub(b).wrapping_sub(1);
    }
    x
}

impl Cartridge {
    pub fn new(rom: &[u8]) -> Result<Cartridge, RomError> {
        if rom.is_empty() {
            return Err(RomError::Empty);
        }
        #[allow(clippy::manual_is_multiple_of)] // is_multiple_of needs Rust 1.87
        if rom.len() % ROM_BANK != 0 {
            return Err(RomError::Size(rom.len()));
        }
        let computed = header_checksum(rom);
        if rom[0x14D] != computed {
            return Err(RomError::HeaderChecksum {
                stored: rom[0x14D],
                computed,
            });
        }
        let carttype = rom[0x147];
        let (mbc, sram, battery) = match carttype {
            0x00 => (Mbc::RomOnly, false, false),
            0x01 => (Mbc::Mbc1, false, false),
            0x02 => (Mbc::Mbc1, true, false),
            0x03 => (Mbc::Mbc1, true, true),
            0x08 => (Mbc::RomOnly, true, false),
            0x09 => (Mbc::RomOnly, true, true),
            t => return Err(RomError::CartridgeType(t)),
        };
        let ram_banks = match rom[0x149] {
            0x00..=0x02 => 1,
            0x03 => 4,
            0x04 => 16,
            0x05 => 8,
            r => return Err(RomError::RamSize(r)),
        };
        let rom_banks = rom.len() / ROM_BANK;
        // PyBoy's MBC1M test: 64 banks that all repeat bank 0's logo area.
        let multicart = mbc == Mbc::Mbc1
            && rom_banks == 64
            && (1..rom_banks)
                .all(|b| rom[b * ROM_BANK + 0x104..b * ROM_BANK + 0x134] == rom[0x104..0x134]);
        Ok(Cartridge {
            rom: rom.to_vec(),
            mbc,
            carttype,
            sram,
            battery,
            rom_banks,
            ram_banks,
            ram: vec![0; RAM_BANK * RAM_BANKS_ALLOCATED],
            rombank_selected: 1,
            rombank_selected_low: 0,
            rambank_selected: 0,
            // ROM-only cartridges with RAM have it always on; MBC1 starts with it off.
            rambank_enabled: mbc == Mbc::RomOnly && sram,
            memorymodel: 0,
            bank_select_register1: 1,
            bank_select_register2: 0,
            multicart,
        })
    }

    /// A byte of the ROM as the CPU sees it through bank `bank` (wrapping past the end, as a
    /// flat array does: PyBoy indexes its 2-D view without bounds checks).
    #[inline(always)]
    pub fn rom_byte(&self, bank: usize, offset: usize) -> u8 {
        let i = bank.wrapping_mul(ROM_BANK).wrapping_add(offset);
        match self.rom.get(i) {
            Some(&b) => b,
            None => self.rom[i % self.rom.len()],
        }
    }

    #[inline(always)]
    pub fn read_rom(&self, addr: u16) -> u8 {
        let a = addr as usize;
        if a < 0x4000 {
            self.rom_byte(self.rombank_selected_low, a)
        } else {
            self.rom_byte(self.rombank_selected, a - 0x4000)
        }
    }

    pub fn read_ram(&mut self, addr: u16) -> u8 {
        let off = addr as usize - 0xA000;
        if !self.rambank_enabled {
            return 0xFF;
        }
        match self.mbc {
            Mbc::RomOnly => {
                self.ram[(self.rambank_selected % RAM_BANKS_ALLOCATED) * RAM_BANK + off]
            }
            Mbc::Mbc1 => {
                self.rambank_selected = if self.memorymodel == 1 {
                    self.bank_select_register2 as usize % self.ram_banks
                } else {
                    0
                };
                self.ram[self.rambank_selected * RAM_BANK + off]
            }
        }
    }

    pub fn write(&mut self, addr: u16, value: u8) {
        let a = addr as usize;
        match self.mbc {
            Mbc::RomOnly => {
                if (0x2000..0x4000).contains(&a) {
                    // PyBoy keeps one bit of the value (zero counts as one): a ROM-only
                    // cartridge written 2 at 0x2000 shows bank 0 at 0x4000.
                    let v = if value == 0 { 1 } else { value };
                    self.rombank_selected = (v & 1) as usize;
                } else if (0xA000..0xC000).contains(&a) {
                    let bank = self.rambank_selected % RAM_BANKS_ALLOCATED;
                    self.ram[bank * RAM_BANK + a - 0xA000] = value;
                }
            }
            Mbc::Mbc1 => {
                if a < 0x2000 {
                    self.rambank_enabled = value & 0x0F == 0x0A;
                } else if a < 0x4000 {
                    let v = value & 0x1F;
                    self.bank_select_register1 = if v == 0 { 1 } else { v };
                } else if a < 0x6000 {
                    self.bank_select_register2 = value & 0b11;
                } else if a < 0x8000 {
                    self.memorymodel = value & 1;
                } else if (0xA000..0xC000).contains(&a) && self.rambank_enabled {
                    self.rambank_selected = if self.memorymodel == 1 {
                        self.bank_select_register2 as usize
                    } else {
                        0
                    };
                    let bank = self.rambank_selected % self.ram_banks;
                    self.ram[bank * RAM_BANK + a - 0xA000] = value;
                }
                let r1 = self.bank_select_register1 as usize;
                let r2 = self.bank_select_register2 as usize;
                self.rombank_selected_low = if self.memorymodel == 1 {
                    let shift = if self.multicart { 4 } else { 5 };
                    (r2 << shift) % self.rom_banks
                } else {
                    0
                };
                self.rombank_selected = if self.multicart {
                    let mut b = (r2 << 4) | (r1 & 0x0F);
                    if r1 & 0x0F == 0 && r1 & 0x10 == 0 {
                        b |= 1;
                    }
                    b % self.rom_banks
                } else {
                    ((r2 << 5) | r1) % self.rom_banks
                };
            }
        }
    }
}
