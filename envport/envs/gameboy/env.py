"""A Game Boy game as an RL environment, on both sides: the reference drives PyBoy 2.8.1 (sound
off), the translation drives the Rust core (``envport_gb``), one emulator each, in exactly the
same way; :class:`CoreVectorEnv` steps a batch of cores in one Rayon call (``VecGameBoy``) and
:class:`GymCoreVectorEnv` puts it behind Gymnasium's vector API.

A game is described by a :class:`Game` (its ROM, the RAM bytes of its score, game-over flag and
observation, its action set and how an episode starts); everything else here is generic, so
another game is a ROM and a ``Game``.

Episode protocol (both sides): power-on (a snapshot taken at construction: PyBoy ``load_state``,
the core ``load_state``), the boot ROM and ``title_frames`` frames with no button, then
``wait(seed)`` more frames (the frames a player waits on the title screen seed the game's
randomness), Start held for one frame, one more frame with no button (rendered). A step holds the
action's buttons for ``frame_skip`` frames (``tick(frame_skip, render=True)``: the last one
rendered); reward = score after - score before (RAM), terminated = the game-over flag (RAM),
truncated = ``max_frames // frame_skip`` steps reached.

State (``get_state``): registers, WRAM, VRAM, OAM, I/O, HRAM+IE, the screen as palette shades
(0-3), the step counter and the buttons held, all compared exactly, and an *opaque* snapshot for
injection (PyBoy's save state on the reference, ``pyboy_state``; the core's own,
``core_state``), never compared: ``set_state`` on the core accepts either (a PyBoy save state is
imported with ``load_pyboy_state``). ``get_state(include_opaque=False)`` leaves the snapshot out
(PyBoy's save state costs about 10 ms).
"""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

import numpy as np

from envport.core.spaces import Box, Discrete
from envport.envs.gameboy.build_roms import rom_path

BUTTON_NAMES = ("right", "left", "up", "down", "a", "b", "select", "start")  # envport_gb's bits
START = 1 << BUTTON_NAMES.index("start")
#: PyBoy's default "Grey" palette, red channel -> shade (0 white ... 3 black).
PYBOY_SHADE = {255: 0, 153: 1, 85: 2, 0: 3}
REGIONS: tuple[tuple[str, int, int], ...] = (
    ("wram", 0xC000, 0xE000), ("vram", 0x8000, 0xA000), ("oam", 0xFE00, 0xFEA0),
    ("io", 0xFF00, 0xFF80), ("hram", 0xFF80, 0x10000),
)
OPAQUE_FIELDS = ("pyboy_state", "core_state")


def mask_of(buttons: Sequence[str]) -> int:
    return sum(1 << BUTTON_NAMES.index(b) for b in buttons)


@dataclass(frozen=True)
class Game:
    """One game ROM as an environment."""

    rom: str  # a name in build_roms.ROMS
    score_addr: int  # one byte, binary
    over_addr: int  # non-zero once the game is over (or equal to ``over_value`` where set)
    obs_addrs: tuple[int, ...]  # observation: these RAM bytes / 255
    obs_names: tuple[str, ...]
    actions: tuple[tuple[str, ...], ...]  # action i holds these buttons
    title_frames: int  # frames from power-on to the title screen's input loop
    max_wait: int  # wait(seed) is uniform in [0, max_wait)
    #: None: over once the byte at ``over_addr`` is non-zero; else once it equals this (a test
    #: ROM's stage byte reaching its "done" value)
    over_value: int | None = None

    def over(self, byte: Any) -> Any:
        """The game-over test on the byte(s) at ``over_addr`` (a scalar or an array)."""
        return byte != 0 if self.over_value is None else byte == self.over_value

    def wait(self, seed: int) -> int:
        return int(np.random.default_rng(seed).integers(0, self.max_wait))

    @property
    def span(self) -> tuple[int, int]:
        """The RAM bytes a step reads: from the lowest to the highest address it reports."""
        addrs = (self.score_addr, self.over_addr, *self.obs_addrs)
        return min(addrs), max(addrs) + 1

    @property
    def masks(self) -> np.ndarray:
        return np.asarray([mask_of(a) for a in self.actions], np.uint8)


def _check_options(frame_skip: int, max_frames: int) -> None:
    if isinstance(frame_skip, bool) or not isinstance(frame_skip, int) or frame_skip < 1:
        raise ValueError(f"frame_skip must be a positive integer, got {frame_skip!r}")
    if isinstance(max_frames, bool) or not isinstance(max_frames, int) or max_frames < frame_skip:
        raise ValueError(f"max_frames must be an integer >= frame_skip, got {max_frames!r}")


@cache
def _files(rom: str) -> tuple[bytes, bytes]:
    return rom_path(rom).read_bytes(), rom_path("boot").read_bytes()


class _GameSide:
    """What both sides share: the episode protocol over an emulator with ``_power_on``,
    ``_tick(n, render)``, ``_set_buttons(mask)``, ``_read(lo, hi)``, ``_registers()``,
    ``_shades()`` and the snapshot methods."""

    opaque_fields = OPAQUE_FIELDS

    def __init__(self, game: Game, frame_skip: int = 4, max_frames: int = 10_000) -> None:
        _check_options(frame_skip, max_frames)
        self.game, self.frame_skip = game, frame_skip
        self.max_steps = max_frames // frame_skip
        self.t, self.held = 0, 0
        self.render = True  # False: steps do not render (the benchmark's no-render rows)
        self.observation_space = Box(0.0, 1.0, (len(game.obs_addrs),))
        self.action_space = Discrete(len(game.actions))

    # -- the emulator, per side
    def _power_on(self) -> None: raise NotImplementedError
    def _tick(self, n: int, render: bool) -> None: raise NotImplementedError
    def _press(self, mask: int) -> None: raise NotImplementedError
    def _read(self, lo: int, hi: int) -> np.ndarray: raise NotImplementedError
    def _registers(self) -> np.ndarray: raise NotImplementedError
    def _shades(self) -> np.ndarray: raise NotImplementedError
    def _snapshot(self) -> dict[str, np.ndarray]: raise NotImplementedError
    def _restore(self, state: Mapping[str, Any]) -> None: raise NotImplementedError

    def _set_buttons(self, mask: int) -> None:
        if mask != self.held:
            self._press(mask)
            self.held = mask

    def _obs(self) -> np.ndarray:
        lo, hi = self.game.span
        return self._read(lo, hi)[[a - lo for a in self.game.obs_addrs]].astype(np.float32) / 255.0

    # -- the Reference protocol
    def reset(self, seed: int) -> np.ndarray:
        self._power_on()
        self.held, self.t = 0, 0
        self._tick(self.game.title_frames + self.game.wait(seed), False)
        self._set_buttons(START)
        self._tick(1, False)
        self._set_buttons(0)
        self._tick(1, True)
        return self._obs()

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        a = int(action)
        if not 0 <= a < len(self.game.actions):
            raise ValueError(f"action {action!r} outside Discrete({len(self.game.actions)})")
        lo, hi = self.game.span
        before = int(self._read(self.game.score_addr, self.game.score_addr + 1)[0])
        self._set_buttons(int(self.game.masks[a]))
        self._tick(self.frame_skip, self.render)
        self.t += 1
        ram = self._read(lo, hi)  # only the bytes the step reports (PyBoy reads byte by byte)
        reward = float(int(ram[self.game.score_addr - lo]) - before)
        terminated = bool(self.game.over(ram[self.game.over_addr - lo]))
        truncated = not terminated and self.t >= self.max_steps
        obs = ram[[x - lo for x in self.game.obs_addrs]].astype(np.float32) / 255.0
        return obs, reward, terminated, truncated, {}

    def get_state(self, include_opaque: bool = True) -> dict[str, Any]:
        state: dict[str, Any] = {name: self._read(lo, hi) for name, lo, hi in REGIONS}
        state.update(registers=self._registers(), screen=self._shades(),
                     t=np.int32(self.t), held=np.int32(self.held))
        if include_opaque:
            state.update(self._snapshot())
        return state

    def set_state(self, state: Mapping[str, Any]) -> None:
        self._restore(state)
        self.t, self.held = int(state["t"]), int(state["held"])

    def tape(self) -> dict[str, np.ndarray]:
        return {}  # an emulator draws no randomness: its "random" numbers are in its RAM


class PyBoyGame(_GameSide):
    """The reference: PyBoy 2.8.1, sound off, no window, the project's boot ROM."""

    def __init__(self, game: Game, frame_skip: int = 4, max_frames: int = 10_000) -> None:
        super().__init__(game, frame_skip, max_frames)
        from envport.envs.gameboy.lockstep import close_at_exit, make_pyboy

        self.pb = make_pyboy(rom_path(game.rom), rom_path("boot"))
        close_at_exit(self)
        buf = io.BytesIO()
        self.pb.save_state(buf)
        self._power_on_state = buf.getvalue()

    def _power_on(self) -> None:
        self.pb.load_state(io.BytesIO(self._power_on_state))

    def _tick(self, n: int, render: bool) -> None:
        self.pb.tick(n, render)

    def _press(self, mask: int) -> None:
        for i, name in enumerate(BUTTON_NAMES):  # only the changes, as a player's events
            if (mask ^ self.held) >> i & 1:
                (self.pb.button_press if mask >> i & 1 else self.pb.button_release)(name)

    def _read(self, lo: int, hi: int) -> np.ndarray:
        return np.asarray(self.pb.memory[lo:hi], np.uint8)

    def _registers(self) -> np.ndarray:
        r = self.pb.register_file
        return np.asarray([r.A, r.F, r.B, r.C, r.D, r.E, r.HL, r.SP, r.PC], np.int32)

    def _shades(self) -> np.ndarray:
        red = np.asarray(self.pb.screen.ndarray)[:, :, 0]
        lut = np.zeros(256, np.uint8)
        for value, shade in PYBOY_SHADE.items():
            lut[value] = shade
        return lut[red]

    def _snapshot(self) -> dict[str, np.ndarray]:
        buf = io.BytesIO()
        self.pb.save_state(buf)
        return {"pyboy_state": np.frombuffer(buf.getvalue(), np.uint8).copy()}

    def _restore(self, state: Mapping[str, Any]) -> None:
        if "pyboy_state" not in state:
            raise ValueError("PyBoy can only be set from a PyBoy save state (field pyboy_state)")
        self.pb.load_state(io.BytesIO(np.asarray(state["pyboy_state"], np.uint8).tobytes()))

    def close(self) -> None:
        self.pb.stop(save=False)


class CoreGame(_GameSide):
    """The translation: one Rust core (``envport_gb.GameBoy``)."""

    def __init__(self, game: Game, frame_skip: int = 4, max_frames: int = 10_000) -> None:
        super().__init__(game, frame_skip, max_frames)
        import envport_gb

        rom, boot = _files(game.rom)
        self.gb = envport_gb.GameBoy(rom, boot)
        self._power_on_state = self.gb.save_state()

    def _power_on(self) -> None:
        self.gb.load_state(self._power_on_state)

    def _tick(self, n: int, render: bool) -> None:
        self.gb.tick(n, render)

    def _press(self, mask: int) -> None:
        self.gb.set_buttons(mask)

    def _read(self, lo: int, hi: int) -> np.ndarray:
        return np.frombuffer(self.gb.read(lo, hi), np.uint8).copy()

    def _registers(self) -> np.ndarray:
        return np.asarray(self.gb.registers(), np.int32)

    def _shades(self) -> np.ndarray:
        return np.asarray(self.gb.shades(), np.uint8)

    def _snapshot(self) -> dict[str, np.ndarray]:
        return {"core_state": np.frombuffer(self.gb.save_state(), np.uint8).copy()}

    def _restore(self, state: Mapping[str, Any]) -> None:
        if "core_state" in state:
            self.gb.load_state(np.asarray(state["core_state"], np.uint8).tobytes())
        elif "pyboy_state" in state:
            self.gb.load_pyboy_state(np.asarray(state["pyboy_state"], np.uint8).tobytes())
        else:
            raise ValueError("a core state needs a snapshot field (core_state or pyboy_state)")

    def step_batch(self, states: Sequence[Mapping[str, Any]], actions: Sequence[Any],
                   threads: int = 0) -> list[tuple[dict[str, Any], np.ndarray, float,
                                                   bool, bool]]:
        """One step from each of ``states`` with its action, all in one ``VecGameBoy`` call
        (Rayon): ``(state after, obs, reward, terminated, truncated)`` per case, as
        :meth:`step` from :meth:`set_state` gives them."""
        import envport_gb

        rom, boot = _files(self.game.rom)
        n = len(states)
        vec = envport_gb.VecGameBoy(rom, n, boot, threads)
        for i, s in enumerate(states):
            if "core_state" in s:
                vec.load_state(i, np.asarray(s["core_state"], np.uint8).tobytes())
            else:
                vec.load_pyboy_state(i, np.asarray(s["pyboy_state"], np.uint8).tobytes())
        masks = self.game.masks[np.asarray([int(a) for a in actions])]
        before = vec.read(self.game.score_addr, self.game.score_addr + 1)[:, 0].astype(int)
        vec.tick(self.frame_skip, True, [int(m) for m in masks])
        ram = vec.read(0xC000, 0xE000)
        regions = {name: vec.read(lo, hi) for name, lo, hi in REGIONS}
        regs, shades = np.asarray(vec.registers(), np.int32), np.asarray(vec.shades(), np.uint8)
        out = []
        for i, s in enumerate(states):
            t = int(s["t"]) + 1
            terminated = bool(self.game.over(ram[i, self.game.over_addr - 0xC000]))
            state: dict[str, Any] = {name: np.asarray(v[i]) for name, v in regions.items()}
            state.update(registers=regs[i], screen=shades[i], t=np.int32(t),
                         held=np.int32(masks[i]))
            obs = ram[i, [x - 0xC000 for x in self.game.obs_addrs]].astype(np.float32) / 255.0
            reward = float(int(ram[i, self.game.score_addr - 0xC000]) - before[i])
            out.append((state, obs, reward, terminated, not terminated and t >= self.max_steps))
        return out


# ------------------------------------------------------------------------------ the batch
class CoreVectorEnv:
    """``num_envs`` cores stepped as one batch (``VecGameBoy``: one call, Rayon, GIL released),
    with same-step autoreset (the step that ends an episode returns the next episode's first
    observation, as ``envport.train.backends.HostVectorEnv`` requires). Environment ``i``'s
    resets draw their seeds from its own stream, seeded with ``seed * num_envs + i``.
    An ending episode is reset on a single core that runs the reset protocol, whose state is
    then loaded into the batch slot (``VecGameBoy.load_state``)."""

    def __init__(self, game: Game, num_envs: int, seed: int = 0, frame_skip: int = 4,
                 max_frames: int = 10_000, threads: int = 0) -> None:
        if isinstance(num_envs, bool) or not isinstance(num_envs, int) or num_envs < 1:
            raise ValueError(f"num_envs must be a positive integer, got {num_envs!r}")
        _check_options(frame_skip, max_frames)
        import envport_gb

        self.game, self.num_envs, self.frame_skip = game, num_envs, frame_skip
        self.max_steps = max_frames // frame_skip
        rom, boot = _files(game.rom)
        self.vec = envport_gb.VecGameBoy(rom, num_envs, boot, threads)
        self._resetter = CoreGame(game, frame_skip, max_frames)
        self.observation_space = Box(0.0, 1.0, (len(game.obs_addrs),))
        self.action_space = Discrete(len(game.actions))
        self._seed = seed
        self._rngs = [np.random.default_rng(seed * num_envs + i) for i in range(num_envs)]
        self.t = np.zeros(num_envs, np.int64)
        self._obs_idx = np.asarray([a - 0xC000 for a in game.obs_addrs])

    def _reset_one(self, i: int) -> None:
        self._resetter.reset(int(self._rngs[i].integers(0, 2**31 - 1)))
        self.vec.load_state(i, self._resetter.gb.save_state())
        self.t[i] = 0

    def _obs(self, ram: np.ndarray) -> np.ndarray:
        return ram[:, self._obs_idx].astype(np.float32) / 255.0

    def reset(self) -> np.ndarray:
        self._rngs = [np.random.default_rng(self._seed * self.num_envs + i)
                      for i in range(self.num_envs)]
        for i in range(self.num_envs):
            self._reset_one(i)
        return self._obs(self.vec.read(0xC000, 0xE000))

    def step(self, actions: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        acts = np.asarray(actions).reshape(self.num_envs)
        if np.any(acts < 0) or np.any(acts >= len(self.game.actions)):
            raise ValueError(f"actions outside Discrete({len(self.game.actions)}): {acts}")
        before = self.vec.read(self.game.score_addr, self.game.score_addr + 1)[:, 0]
        self.vec.tick(self.frame_skip, False, [int(m) for m in self.game.masks[acts]])
        ram = self.vec.read(0xC000, 0xE000)
        reward = ram[:, self.game.score_addr - 0xC000].astype(np.float32) - before
        terminated = np.asarray(self.game.over(ram[:, self.game.over_addr - 0xC000]))
        self.t += 1
        truncated = ~terminated & (self.t >= self.max_steps)
        obs = self._obs(ram)
        self.final_obs = obs.copy()  # the observations the episodes ended on
        done = np.flatnonzero(terminated | truncated)
        for i in done:
            self._reset_one(int(i))
        if done.size:
            obs[done] = self._obs(self.vec.read(0xC000, 0xE000))[done]
        return obs, reward, terminated, truncated

    def get_state(self) -> dict[str, Any]:
        return {"cores": [self.vec.save_state(i) for i in range(self.num_envs)],
                "t": self.t.copy(), "rngs": [r.bit_generator.state for r in self._rngs]}

    def set_state(self, state: Mapping[str, Any]) -> None:
        for i, data in enumerate(state["cores"]):
            self.vec.load_state(i, data)
        self.t = np.asarray(state["t"]).copy()
        for r, s in zip(self._rngs, state["rngs"], strict=True):
            r.bit_generator.state = s


class PyBoyVectorEnv:
    """``num_envs`` PyBoy references stepped in turn, with :class:`CoreVectorEnv`'s interface,
    seeding and same-step autoreset (steps without rendering, as the batch's): the reference
    backend for host training, playing the same games as a core batch of the same seed."""

    def __init__(self, game: Game, num_envs: int, seed: int = 0, frame_skip: int = 4,
                 max_frames: int = 10_000) -> None:
        if isinstance(num_envs, bool) or not isinstance(num_envs, int) or num_envs < 1:
            raise ValueError(f"num_envs must be a positive integer, got {num_envs!r}")
        self.game, self.num_envs, self._seed = game, num_envs, seed
        self.sides = [PyBoyGame(game, frame_skip, max_frames) for _ in range(num_envs)]
        for side in self.sides:
            side.render = False
        self.observation_space = Box(0.0, 1.0, (len(game.obs_addrs),))
        self.action_space = Discrete(len(game.actions))
        self._rngs: list[np.random.Generator] = []

    def _reset_one(self, i: int) -> np.ndarray:
        return self.sides[i].reset(int(self._rngs[i].integers(0, 2**31 - 1)))

    def reset(self) -> np.ndarray:
        self._rngs = [np.random.default_rng(self._seed * self.num_envs + i)
                      for i in range(self.num_envs)]
        return np.stack([self._reset_one(i) for i in range(self.num_envs)])

    def step(self, actions: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        acts = np.asarray(actions).reshape(self.num_envs)
        obs = np.zeros((self.num_envs, len(self.game.obs_addrs)), np.float32)
        reward = np.zeros(self.num_envs, np.float32)
        terminated = np.zeros(self.num_envs, bool)
        truncated = np.zeros(self.num_envs, bool)
        self.final_obs = obs.copy()
        for i, side in enumerate(self.sides):
            o, r, te, tu, _ = side.step(int(acts[i]))
            self.final_obs[i], reward[i], terminated[i], truncated[i] = o, r, te, tu
            obs[i] = self._reset_one(i) if te or tu else o
        return obs, reward, terminated, truncated

    def get_state(self) -> dict[str, Any]:
        return {"sides": [s.get_state() for s in self.sides],
                "rngs": [r.bit_generator.state for r in self._rngs]}

    def set_state(self, state: Mapping[str, Any]) -> None:
        for side, saved in zip(self.sides, state["sides"], strict=True):
            side.set_state(saved)
        for r, saved in zip(self._rngs, state["rngs"], strict=True):
            r.bit_generator.state = saved

    def close(self) -> None:
        for side in self.sides:
            side.close()


class GymCoreVectorEnv:
    """:class:`CoreVectorEnv` behind Gymnasium's vector API (``gymnasium.vector.VectorEnv``:
    ``reset(seed=) -> (obs, infos)``, ``step -> (obs, rewards, terminations, truncations,
    infos)``, batched spaces), SAME_STEP autoreset: the ending observation is in
    ``infos["final_obs"]`` with its mask ``infos["_final_obs"]``."""

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        return _gym_class()(*args, **kwargs)


@cache
def _gym_class() -> type:
    import gymnasium
    from gymnasium.vector import AutoresetMode, VectorEnv

    class _Gym(VectorEnv):

        def __init__(self, game: Game, num_envs: int, frame_skip: int = 4,
                     max_frames: int = 10_000, threads: int = 0) -> None:
            self.metadata = {"autoreset_mode": AutoresetMode.SAME_STEP}
            self.core = CoreVectorEnv(game, num_envs, 0, frame_skip, max_frames, threads)
            self.num_envs = num_envs
            n = len(game.obs_addrs)
            self.single_observation_space = gymnasium.spaces.Box(0.0, 1.0, (n,), np.float32)
            self.single_action_space = gymnasium.spaces.Discrete(len(game.actions))
            self.observation_space = gymnasium.vector.utils.batch_space(
                self.single_observation_space, num_envs)
            self.action_space = gymnasium.vector.utils.batch_space(
                self.single_action_space, num_envs)

        def reset(self, *, seed: int | None = None, options: dict | None = None
                  ) -> tuple[np.ndarray, dict]:
            if seed is not None:
                self.core._seed = int(seed)
            return self.core.reset(), {}

        def step(self, actions: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray,
                                              dict]:
            obs, rew, term, trunc = self.core.step(actions)
            done = term | trunc
            infos: dict[str, Any] = {}
            if done.any():
                final = np.empty(self.num_envs, dtype=object)
                final[:] = None
                for i in np.flatnonzero(done):
                    final[i] = self.core.final_obs[i]
                infos["final_obs"], infos["_final_obs"] = final, done.copy()
            return obs, rew.astype(np.float64), term, trunc, infos

    return _Gym
