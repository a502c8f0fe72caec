//! The Python module `envport_gb`: one emulator (`GameBoy`) and a batch stepped in parallel
//! with Rayon, the GIL released (`VecGameBoy`).

use numpy::ndarray::{ArrayView, Dimension, IntoDimension, ShapeBuilder};
use numpy::{PyArray, PyArray1, PyArrayMethods};
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};
use rayon::prelude::*;

use crate::gb::{GameBoy, Stall, BUTTON_NAMES};
use crate::render::{COLS, ROWS};

fn button_index(name: &str) -> PyResult<usize> {
    let lower = name.to_ascii_lowercase();
    BUTTON_NAMES
        .iter()
        .position(|b| *b == lower)
        .ok_or_else(|| {
            PyValueError::new_err(format!(
                "unknown button {name:?}; the buttons are {}",
                BUTTON_NAMES.join(", ")
            ))
        })
}

fn stall_error(stall: Stall) -> PyErr {
    match stall {
        Stall::UnusedOpcode { opcode, pc } => PyRuntimeError::new_err(format!(
            "the CPU reached opcode 0x{opcode:02X} at PC=0x{pc:04X}, which is no instruction \
             (PyBoy 2.8.1 stops advancing there and never finishes the frame)"
        )),
    }
}

fn make(rom: &[u8], boot_rom: Option<&[u8]>) -> PyResult<GameBoy> {
    if let Some(b) = boot_rom {
        if b.len() != 256 {
            return Err(PyValueError::new_err(format!(
                "boot_rom must be 256 bytes (a DMG boot ROM), got {}",
                b.len()
            )));
        }
    }
    GameBoy::new(rom, boot_rom).map_err(|e| PyValueError::new_err(format!("bad ROM: {e}")))
}

fn export_pyboy<'py>(py: Python<'py>, gb: &GameBoy, strict: bool) -> PyResult<Bound<'py, PyBytes>> {
    if strict {
        let gaps = gb.pyboy_state_gaps();
        if !gaps.is_empty() {
            return Err(PyValueError::new_err(format!(
                "the machine holds what PyBoy's save state cannot carry: {} (PyBoy loading it \
                 would be another machine; strict=False exports it anyway)",
                gaps.join(", ")
            )));
        }
    }
    Ok(PyBytes::new(py, &gb.save_pyboy_state()))
}

fn check_range(start: usize, stop: usize) -> PyResult<()> {
    if start > stop || stop > 0x10000 {
        return Err(PyValueError::new_err(format!(
            "address range [0x{start:X}, 0x{stop:X}) is not within [0, 0x10000)"
        )));
    }
    Ok(())
}

#[pyclass(name = "GameBoy", module = "envport_gb")]
struct PyGameBoy {
    gb: GameBoy,
}

#[pymethods]
impl PyGameBoy {
    #[new]
    #[pyo3(signature = (rom, boot_rom=None))]
    fn new(rom: &[u8], boot_rom: Option<&[u8]>) -> PyResult<Self> {
        Ok(PyGameBoy {
            gb: make(rom, boot_rom)?,
        })
    }

    /// Advances `count` frames (PyBoy's `tick`); only the last is rendered when `render`.
    #[pyo3(signature = (count=1, render=true))]
    fn tick(&mut self, py: Python<'_>, count: u64, render: bool) -> PyResult<bool> {
        let gb = &mut self.gb;
        let ok = py.detach(|| gb.tick(count, render));
        match (ok, self.gb.stall) {
            (false, Some(s)) => Err(stall_error(s)),
            _ => Ok(true),
        }
    }

    fn button_press(&mut self, name: &str) -> PyResult<()> {
        self.gb.set_button(button_index(name)?, true);
        Ok(())
    }

    fn button_release(&mut self, name: &str) -> PyResult<()> {
        self.gb.set_button(button_index(name)?, false);
        Ok(())
    }

    /// Holds exactly the buttons of `mask` (bit i = BUTTON_NAMES[i]).
    fn set_buttons(&mut self, mask: u8) {
        self.gb.set_buttons(mask);
    }

    /// Bytes [start, stop) as the CPU reads them between instructions (as `PyBoy.memory`).
    fn read<'py>(
        &mut self,
        py: Python<'py>,
        start: usize,
        stop: usize,
    ) -> PyResult<Bound<'py, PyBytes>> {
        check_range(start, stop)?;
        let v: Vec<u8> = (start..stop).map(|a| self.gb.read(a as u16)).collect();
        Ok(PyBytes::new(py, &v))
    }

    fn read8(&mut self, addr: u16) -> u8 {
        self.gb.read(addr)
    }

    /// Writes bytes from `start` through the bus (as `PyBoy.memory[...] = ...`).
    fn write(&mut self, start: usize, data: &[u8]) -> PyResult<()> {
        check_range(start, start + data.len())?;
        for (i, &b) in data.iter().enumerate() {
            self.gb.write((start + i) as u16, b);
        }
        Ok(())
    }

    /// (A, F, B, C, D, E, HL, SP, PC)
    fn registers(&self) -> (u8, u8, u8, u8, u8, u8, u16, u16, u16) {
        let g = &self.gb;
        (g.a, g.f, g.b, g.c, g.d, g.e, g.hl, g.sp, g.pc)
    }

    #[allow(clippy::too_many_arguments)]
    fn set_registers(
        &mut self,
        a: u8,
        f: u8,
        b: u8,
        c: u8,
        d: u8,
        e: u8,
        hl: u16,
        sp: u16,
        pc: u16,
    ) {
        let g = &mut self.gb;
        (g.a, g.f, g.b, g.c, g.d, g.e, g.hl, g.sp, g.pc) = (a, f, b, c, d, e, hl, sp, pc);
    }

    /// CPU and interrupt state besides the registers, with PyBoy's names.
    fn cpu_state<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let g = &self.gb;
        let d = PyDict::new(py);
        d.set_item("interrupt_master_enable", g.ime)?;
        d.set_item("interrupt_enable_delay", g.ei_delay)?;
        d.set_item("halted", g.halted)?;
        d.set_item("stopped", g.stopped)?;
        d.set_item("interrupts_enabled_register", g.ie_reg)?;
        d.set_item("interrupt_queued", g.interrupt_queued)?;
        d.set_item("interrupts_flag_register", g.if_reg)?;
        d.set_item("cycles", g.cycles)?;
        d.set_item("bootrom_enabled", g.bootrom_enabled)?;
        Ok(d)
    }

    /// The screen as PyBoy's `screen.ndarray` (144, 160, 4) RGBA uint8, a copy.
    fn screen<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let mut out = vec![0u8; ROWS * COLS * 4];
        self.gb.screen.rgba_into(&mut out);
        Ok(PyArray1::from_vec(py, out)
            .reshape([ROWS, COLS, 4])?
            .into_any())
    }

    /// Palette shades 0-3 of the screen, (144, 160) uint8, a copy.
    fn shades<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        Ok(PyArray1::from_slice(py, &self.gb.screen.shades)
            .reshape([ROWS, COLS])?
            .into_any())
    }

    fn save_state<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, &self.gb.save_state())
    }

    fn load_state(&mut self, data: &[u8]) -> PyResult<()> {
        self.gb
            .load_state(data)
            .map_err(|e| PyValueError::new_err(format!("bad state: {e}")))
    }

    /// The machine as a PyBoy 2.8.1 save state (format 29, DMG, sound off), for
    /// `PyBoy.load_state`. `strict`: refuse (ValueError naming them) when the machine holds
    /// something PyBoy's format cannot carry (see `pyboy_state_gaps`), so that PyBoy loading
    /// the bytes is the same machine.
    #[pyo3(signature = (strict=true))]
    fn save_pyboy_state<'py>(
        &self,
        py: Python<'py>,
        strict: bool,
    ) -> PyResult<Bound<'py, PyBytes>> {
        export_pyboy(py, &self.gb, strict)
    }

    /// What the machine holds that PyBoy's save-state format does not carry (empty: PyBoy
    /// loading `save_pyboy_state()` is the same machine).
    fn pyboy_state_gaps(&self) -> Vec<&'static str> {
        self.gb.pyboy_state_gaps()
    }

    /// Takes a PyBoy 2.8.1 save state (`PyBoy.save_state`, DMG, sound off) as a fresh PyBoy
    /// would take it with `load_state`.
    fn load_pyboy_state(&mut self, data: &[u8]) -> PyResult<()> {
        self.gb
            .load_pyboy_state(data)
            .map_err(|e| PyValueError::new_err(format!("bad PyBoy state: {e}")))
    }

    /// Zero-copy (144, 160) uint8 view of the palette shades (what `shades()` copies):
    /// read-only, it keeps the emulator alive and shows each new screen after `tick` without
    /// another call (copy it to keep a frame).
    fn shades_view<'py>(this: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        single_view(
            this,
            |g| g.screen.shades.as_ptr(),
            (ROWS, COLS).into_dimension(),
        )
    }

    /// Zero-copy (0x2000,) uint8 view of work RAM, 0xC000-0xDFFF (what `read(0xC000, 0xE000)`
    /// copies); read-only, updated in place by each `tick`.
    fn wram_view<'py>(this: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        single_view(this, |g| g.wram.as_ptr(), [0x2000usize].into_dimension())
    }

    /// Zero-copy (0x7F,) uint8 view of high RAM, 0xFF80-0xFFFE (what `read(0xFF80, 0xFFFF)`
    /// copies); read-only, updated in place by each `tick`.
    fn hram_view<'py>(this: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        single_view(this, |g| g.hram.as_ptr(), [0x7Fusize].into_dimension())
    }

    #[getter]
    fn frame_count(&self) -> u64 {
        self.gb.frame_count
    }

    #[getter]
    fn cycles(&self) -> u64 {
        self.gb.cycles
    }
}

/// A read-only, C-ordered NumPy array of `shape` over an array field of the emulator inside
/// `this` (`field` gives its first byte). The emulator lives inline in the Python object, which
/// never moves and is the array's base: the memory outlives the array. Its values change in
/// place at every `tick`, and `load_state`/`load_pyboy_state` replace the machine in place.
fn single_view<'py, D>(
    this: &Bound<'py, PyGameBoy>,
    field: impl Fn(&GameBoy) -> *const u8,
    shape: D,
) -> PyResult<Bound<'py, PyAny>>
where
    D: Dimension,
{
    let me = this.borrow();
    let ptr = field(&me.gb);
    // SAFETY: `field` returns the start of an inline array of the emulator of at least
    // shape.size() bytes (the callers pair each field with its own shape); see above for why the
    // memory outlives the array. It is marked read-only; Rust writes to it only in methods
    // that take the emulator mutably (`tick`, `write`, `load_*`).
    let view = unsafe { ArrayView::from_shape_ptr(shape, ptr) };
    let arr = unsafe { PyArray::<u8, _>::borrow_from_array(&view, this.clone().into_any()) };
    drop(me);
    let kwargs = PyDict::new(this.py());
    kwargs.set_item("write", false)?;
    arr.call_method("setflags", (), Some(&kwargs))?;
    Ok(arr.into_any())
}

/// One emulator of a batch, on its own cache lines: the threads stepping neighbouring machines
/// never write to a shared line.
#[repr(C, align(128))]
#[derive(Clone)]
struct Slot(GameBoy);

impl std::ops::Deref for Slot {
    type Target = GameBoy;
    fn deref(&self) -> &GameBoy {
        &self.0
    }
}

impl std::ops::DerefMut for Slot {
    fn deref_mut(&mut self) -> &mut GameBoy {
        &mut self.0
    }
}

/// N emulators of one ROM, stepped in parallel (Rayon) by one call with the GIL released.
#[pyclass(name = "VecGameBoy", module = "envport_gb")]
struct PyVecGameBoy {
    /// Never resized after construction: the zero-copy views point into it.
    gbs: Vec<Slot>,
    pool: rayon::ThreadPool,
}

/// A read-only NumPy array over the same field of every emulator of `this` (the field at byte
/// `offset` of a `Slot`, of shape `inner`, row-major): one axis of stride `size_of::<Slot>()`
/// in front. The array keeps `this` alive; its values change in place at every `tick`.
fn batch_view<'py, D>(
    this: &Bound<'py, PyVecGameBoy>,
    offset: usize,
    inner: D,
) -> PyResult<Bound<'py, PyAny>>
where
    D: Dimension,
    D::Larger: Dimension,
{
    let me = this.borrow();
    let n = me.gbs.len();
    let inner_shape = inner.slice().to_vec();
    let mut shape = vec![n];
    shape.extend_from_slice(&inner_shape);
    let mut strides = vec![std::mem::size_of::<Slot>()];
    let mut s = 1usize;
    let mut inner_strides = vec![0usize; inner_shape.len()];
    for (k, &len) in inner_shape.iter().enumerate().rev() {
        inner_strides[k] = s;
        s *= len;
    }
    strides.extend_from_slice(&inner_strides);
    let shape = shape.into_dimension();
    let strides = strides.into_dimension();
    // SAFETY: the pointer is derived from the whole Vec's allocation, and every element the
    // view reaches (n slots, the field of `inner` bytes at `offset` in each) lies inside it.
    // The Vec is never resized and the array's base object is `this`, so the memory outlives
    // the array; it is marked read-only, and Rust writes to it only inside `tick`/`load_*`.
    let view = unsafe {
        let base = me.gbs.as_ptr() as *const u8;
        ArrayView::from_shape_ptr(shape.strides(strides), base.add(offset))
    };
    let arr = unsafe { PyArray::<u8, _>::borrow_from_array(&view, this.clone().into_any()) };
    drop(me);
    let kwargs = pyo3::types::PyDict::new(this.py());
    kwargs.set_item("write", false)?;
    arr.call_method("setflags", (), Some(&kwargs))?;
    Ok(arr.into_any())
}

/// Byte offset of a field of the emulator within a `Slot`.
macro_rules! slot_offset {
    ($($field:tt)+) => {{
        let probe = std::mem::MaybeUninit::<Slot>::uninit();
        let base = probe.as_ptr();
        // SAFETY: only the address of the field is taken, nothing is read.
        let field = unsafe { std::ptr::addr_of!((*base).0.$($field)+) } as *const u8;
        field as usize - base as *const u8 as usize
    }};
}

#[pymethods]
impl PyVecGameBoy {
    #[new]
    #[pyo3(signature = (rom, n, boot_rom=None, threads=0))]
    fn new(rom: &[u8], n: usize, boot_rom: Option<&[u8]>, threads: usize) -> PyResult<Self> {
        if n == 0 {
            return Err(PyValueError::new_err(
                "n (the number of emulators) must be at least 1",
            ));
        }
        let gb = make(rom, boot_rom)?;
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .map_err(|e| PyRuntimeError::new_err(format!("thread pool: {e}")))?;
        Ok(PyVecGameBoy {
            gbs: vec![Slot(gb); n],
            pool,
        })
    }

    fn __len__(&self) -> usize {
        self.gbs.len()
    }

    #[getter]
    fn threads(&self) -> usize {
        self.pool.current_num_threads()
    }

    /// Advances every emulator `count` frames. `buttons`, if given, is one uint8 mask per
    /// emulator (bit i = BUTTON_NAMES[i] held), applied before the frames.
    #[pyo3(signature = (count=1, render=false, buttons=None))]
    fn tick(
        &mut self,
        py: Python<'_>,
        count: u64,
        render: bool,
        buttons: Option<Vec<u8>>,
    ) -> PyResult<()> {
        if let Some(b) = &buttons {
            if b.len() != self.gbs.len() {
                return Err(PyValueError::new_err(format!(
                    "buttons has {} masks for {} emulators",
                    b.len(),
                    self.gbs.len()
                )));
            }
            for (g, &m) in self.gbs.iter_mut().zip(b) {
                g.set_buttons(m);
            }
        }
        let gbs = &mut self.gbs;
        let pool = &self.pool;
        py.detach(|| {
            pool.install(|| {
                gbs.par_iter_mut().for_each(|g| {
                    g.tick(count, render);
                })
            })
        });
        for (i, g) in self.gbs.iter().enumerate() {
            if let Some(s) = g.stall {
                let e = stall_error(s);
                return Err(PyRuntimeError::new_err(format!("emulator {i}: {e}")));
            }
        }
        Ok(())
    }

    /// Bytes [start, stop) of every emulator, (N, stop - start) uint8.
    fn read<'py>(
        &mut self,
        py: Python<'py>,
        start: usize,
        stop: usize,
    ) -> PyResult<Bound<'py, PyAny>> {
        check_range(start, stop)?;
        let n = self.gbs.len();
        let mut out = Vec::with_capacity(n * (stop - start));
        for g in self.gbs.iter_mut() {
            out.extend((start..stop).map(|a| g.read(a as u16)));
        }
        Ok(PyArray1::from_vec(py, out)
            .reshape([n, stop - start])?
            .into_any())
    }

    /// Registers of every emulator, (N, 9) uint16: A F B C D E HL SP PC.
    fn registers<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let out: Vec<u16> = self
            .gbs
            .iter()
            .flat_map(|g| {
                [
                    g.a as u16, g.f as u16, g.b as u16, g.c as u16, g.d as u16, g.e as u16, g.hl,
                    g.sp, g.pc,
                ]
            })
            .collect();
        Ok(PyArray1::from_vec(py, out)
            .reshape([self.gbs.len(), 9])?
            .into_any())
    }

    /// Screens of every emulator as palette shades, (N, 144, 160) uint8.
    fn shades<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let mut out = Vec::with_capacity(self.gbs.len() * ROWS * COLS);
        for g in &self.gbs {
            out.extend_from_slice(&g.screen.shades);
        }
        Ok(PyArray1::from_vec(py, out)
            .reshape([self.gbs.len(), ROWS, COLS])?
            .into_any())
    }

    /// Zero-copy (N, 144, 160) uint8 view of every emulator's palette shades (what `shades()`
    /// copies): read-only, it keeps the batch alive and shows the new screens after each
    /// `tick` without another call (copy it to keep a frame).
    fn shades_view<'py>(this: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        batch_view(
            this,
            slot_offset!(screen.shades),
            (ROWS, COLS).into_dimension(),
        )
    }

    /// Zero-copy (N, 0x2000) uint8 view of every emulator's work RAM, 0xC000-0xDFFF (what
    /// `read(0xC000, 0xE000)` copies); read-only, updated in place by each `tick`.
    fn wram_view<'py>(this: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        batch_view(this, slot_offset!(wram), [0x2000usize].into_dimension())
    }

    /// Zero-copy (N, 0x7F) uint8 view of every emulator's high RAM, 0xFF80-0xFFFE (what
    /// `read(0xFF80, 0xFFFF)` copies); read-only, updated in place by each `tick`.
    fn hram_view<'py>(this: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        batch_view(this, slot_offset!(hram), [0x7Fusize].into_dimension())
    }

    fn save_state<'py>(&self, py: Python<'py>, i: usize) -> PyResult<Bound<'py, PyBytes>> {
        let g = self
            .gbs
            .get(i)
            .ok_or_else(|| PyValueError::new_err(format!("no emulator {i}")))?;
        Ok(PyBytes::new(py, &g.save_state()))
    }

    /// Emulator `i` as a PyBoy 2.8.1 save state (see `GameBoy.save_pyboy_state`).
    #[pyo3(signature = (i, strict=true))]
    fn save_pyboy_state<'py>(
        &self,
        py: Python<'py>,
        i: usize,
        strict: bool,
    ) -> PyResult<Bound<'py, PyBytes>> {
        let n = self.gbs.len();
        let g = self
            .gbs
            .get(i)
            .ok_or_else(|| PyValueError::new_err(format!("no emulator {i} of {n}")))?;
        export_pyboy(py, g, strict)
    }

    /// Emulator `i` takes a PyBoy 2.8.1 save state (see `GameBoy.load_pyboy_state`).
    fn load_pyboy_state(&mut self, i: usize, data: &[u8]) -> PyResult<()> {
        let n = self.gbs.len();
        let g = self
            .gbs
            .get_mut(i)
            .ok_or_else(|| PyValueError::new_err(format!("no emulator {i} of {n}")))?;
        g.load_pyboy_state(data)
            .map_err(|e| PyValueError::new_err(format!("bad PyBoy state: {e}")))
    }

    fn load_state(&mut self, i: usize, data: &[u8]) -> PyResult<()> {
        let n = self.gbs.len();
        let g = self
            .gbs
            .get_mut(i)
            .ok_or_else(|| PyValueError::new_err(format!("no emulator {i} of {n}")))?;
        g.load_state(data)
            .map_err(|e| PyValueError::new_err(format!("bad state: {e}")))
    }
}

/// The built-in boot ROM (the bytes of the project's roms/boot.s) used when none is given.
#[pyfunction]
fn project_boot_rom(py: Python<'_>) -> Bound<'_, PyBytes> {
    PyBytes::new(py, &crate::gb::project_boot_rom())
}

#[pymodule]
fn envport_gb(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyGameBoy>()?;
    m.add_class::<PyVecGameBoy>()?;
    m.add_function(wrap_pyfunction!(project_boot_rom, m)?)?;
    m.add("BUTTON_NAMES", BUTTON_NAMES.to_vec())?;
    m.add("FRAME_CYCLES", crate::lcd::FRAME_CYCLES)?;
    Ok(())
}
