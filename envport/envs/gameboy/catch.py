"""``gb-catch``: the project's game ROM ``roms/catch.s`` as an RL environment (see README.md).

Reference: PyBoy 2.8.1 (sound off) driving the ROM; translation: the Rust core, a *host*
translation (``EnvSpec.backend = "host"``: it exposes the Reference protocol and the verifier
runs its host layers on it). Everything game-specific is the :data:`CATCH` record and the two
policies below; another game is another ROM and a copy of this file.

Observation: six RAM bytes / 255 (score, lives, paddle x, fruit x, fruit y, fall speed), a
``Box(0, 1, (6,))``: they are the whole game state (the screen is drawn from them), small enough
for the project's MLP PPO, and cheap on the batch (no rendering). The screen is still compared
(every step in L2 and L3, as palette shades) as part of the state.
"""

from __future__ import annotations

from functools import cache, partial
from typing import Any

import numpy as np

from envport.core.registry import Benchmark, EnvSpec, Option, Training, Verification, lazy
from envport.envs.gameboy.env import Game
from envport.train.config import PPOConfig

CATCH = Game(
    rom="catch",
    score_addr=0xC004,
    over_addr=0xC003,
    obs_addrs=(0xC004, 0xC005, 0xC006, 0xC007, 0xC008, 0xC009),
    obs_names=("score", "lives", "paddle_x", "fruit_x", "fruit_y", "speed"),
    actions=((), ("left",), ("right",), ("a",), ("left", "a"), ("right", "a")),
    title_frames=70,  # the boot ROM hands over during frame 65
    max_wait=512,
)
#: The other ROMs ``-o rom=NAME`` runs the same environment on: one button (or none) held per
#: step, so that L2 and L3 drive them with inputs like the game's.
BUTTON_ACTIONS: tuple[tuple[str, ...], ...] = (
    (), ("a",), ("b",), ("start",), ("select",), ("up",), ("down",), ("left",), ("right",),
    ("right", "a"), ("left", "up"))
#: roms/cputest.s, the CPU instruction test ROM: an episode runs it to the end of its stages
#: (the stage byte 0xC001 reaches 0xFF, frame 1169 from power-on); reward = stage advances.
#: It reads no buttons: the presses reach only P1 and IF, which are compared.
CPUTEST = Game(
    rom="cputest",
    score_addr=0xC001,
    over_addr=0xC001,
    over_value=0xFF,
    obs_addrs=(0xC001, 0xC000, 0xC004, 0xC005, 0xC002, 0xC003),
    obs_names=("stage", "frames", "timer_irqs", "stat_irqs", "loop_lo", "loop_hi"),
    actions=BUTTON_ACTIONS,
    title_frames=66,  # the boot ROM hands over during frame 65
    max_wait=256,
)
#: roms/joypad.s, the joypad-interrupt ROM: reward = joypad interrupts, over at its frame 768.
JOYPAD = Game(
    rom="joypad",
    score_addr=0xC004,
    over_addr=0xC003,
    obs_addrs=(0xC004, 0xC002, 0xC009, 0xC00A, 0xC005, 0xC007),
    obs_names=("interrupts", "buttons", "cursor_x", "cursor_y", "select", "irq_ly"),
    actions=BUTTON_ACTIONS,
    title_frames=66,
    max_wait=256,
)
GAMES: dict[str, Game] = {"catch": CATCH, "cputest": CPUTEST, "joypad": JOYPAD}

OPTIONS = {
    "frame_skip": Option(4, "frames per step, the buttons held for all of them (the last one "
                            "rendered)", kind="int", minimum=1),
    "max_frames": Option(10_000, "truncate after max_frames // frame_skip steps",
                         kind="int", minimum=1),
    "rom": Option("catch", "the ROM: catch (the game), cputest (the CPU instruction test ROM, "
                           "to the end of its stages) or joypad (the joypad-interrupt ROM)",
                  choices=tuple(GAMES)),
}


# PPO for a short run on 2 CPU cores (see README.md, "Training and L4"): both backends are
# host batches, PyBoy's about 2,000 steps/s, so the run is small.
PPO = PPOConfig(
    num_envs=16, num_steps=128, total_steps=200_000, lr=1e-3, anneal_lr=True,
    update_epochs=4, num_minibatches=4, ent_coef=0.01, hidden_sizes=(64, 64))


def random_action(rng: np.random.Generator) -> int:
    return int(rng.integers(0, len(CATCH.actions)))


def scripted_action(obs: np.ndarray, rng: np.random.Generator) -> int:
    """Follows the fruit (fast when far), with a random action one time in five, so the
    episodes reach high scores and speeds as well as misses."""
    if rng.random() < 0.2:
        return random_action(rng)
    paddle, fruit = float(obs[2]) * 255 + 8, float(obs[3]) * 255 + 4  # centres
    far = abs(fruit - paddle) > 24
    if fruit < paddle - 3:
        return 4 if far else 1
    if fruit > paddle + 3:
        return 5 if far else 2
    return 0


def state_bins(state: Any) -> tuple:
    wram = np.asarray(state["wram"])
    return (int(wram[5]), int(wram[8]) // 32, int(wram[9]), (int(wram[7]) - int(wram[6])) // 16)


@cache
def _perturber() -> Any:
    from envport.envs.gameboy.env import PyBoyGame

    return PyBoyGame(CATCH)


def perturb(state: Any, rng: np.random.Generator) -> Any:
    """A visited PyBoy state with the game's variables redrawn (through PyBoy's memory writes,
    then its save state): paddle, fruit, lives, speed and a score that may sit at the edges
    (7, 15, 23 before a speed-up, 254 and 255 where it stops), states a policy rarely reaches.
    One time in two instead: random registers and RAM, drawn on the core and exported to PyBoy
    in its format (``randomize.py``; states that reach an unused opcode, where PyBoy hangs, are
    drawn again)."""
    if rng.random() < 0.5:
        from envport.envs.gameboy.randomize import randomised_state

        return randomised_state(CATCH, state, rng)
    side = _perturber()
    side.set_state(state)
    if int(np.asarray(state["wram"])[2]) == 1:  # playing
        score = int(rng.choice([int(rng.integers(0, 256)), 7, 15, 23, 254, 255]))
        for addr, value in ((0xC004, score), (0xC005, rng.integers(1, 4)),
                            (0xC006, rng.integers(8, 145)), (0xC007, rng.integers(8, 151)),
                            (0xC008, rng.integers(24, 140)), (0xC009, rng.integers(1, 4))):
            side.pb.memory[addr] = int(value)
    return side.get_state()


def l1_every_opcode(per_opcode: int = 1, seed: int = 20261202) -> None:
    """The core's CPU against PyBoy's, every instruction (l1.py), as an L1 component."""
    from envport.envs.gameboy.l1 import OPCODES, run_l1

    n, failures = run_l1(per_opcode=per_opcode, seed=seed)
    assert n == per_opcode * len(OPCODES), f"l1 ran {n} cases, expected {per_opcode * 499}"
    assert not failures, f"{len(failures)} opcode cases differ from PyBoy: {failures[:5]}"


def make_translation(frame_skip: int = 4, max_frames: int = 10_000, rom: str = "catch") -> Any:
    from envport.envs.gameboy.env import CoreGame

    return CoreGame(GAMES[rom], frame_skip, max_frames)


def make_reference(frame_skip: int = 4, max_frames: int = 10_000, rom: str = "catch",
                   **_: Any) -> Any:
    from envport.envs.gameboy.env import PyBoyGame

    return PyBoyGame(GAMES[rom], frame_skip, max_frames)


def make_vector(num_envs: int, seed: int = 0, frame_skip: int = 4, max_frames: int = 10_000,
                threads: int = 0, rom: str = "catch") -> Any:
    """The core batch (``CoreVectorEnv``): the host-vector backend for training, and the
    translation's batched form."""
    from envport.envs.gameboy.env import CoreVectorEnv

    return CoreVectorEnv(GAMES[rom], num_envs, seed, frame_skip, max_frames, threads)


def make_pyboy_vector(num_envs: int, seed: int = 0, frame_skip: int = 4,
                      max_frames: int = 10_000, rom: str = "catch") -> Any:
    """PyBoy references as one host batch (``PyBoyVectorEnv``): the reference backend for
    training; the same games as ``make_vector`` with the same seed."""
    from envport.envs.gameboy.env import PyBoyVectorEnv

    return PyBoyVectorEnv(GAMES[rom], num_envs, seed, frame_skip, max_frames)


def make_gym_vector(num_envs: int, frame_skip: int = 4, max_frames: int = 10_000,
                    threads: int = 0, rom: str = "catch") -> Any:
    """Gymnasium's vector API over the core batch."""
    from envport.envs.gameboy.env import GymCoreVectorEnv

    return GymCoreVectorEnv(GAMES[rom], num_envs, frame_skip, max_frames, threads)


def joypad_scripted_action(obs: np.ndarray, rng: np.random.Generator) -> int:
    """Drives joypad.s's cursor into its clamps (x 160, y 16; then back left along the top),
    buttons held for many steps, with a random action one time in five."""
    if rng.random() < 0.2:
        return int(rng.integers(0, len(BUTTON_ACTIONS)))
    x, y = float(obs[2]) * 255, float(obs[3]) * 255
    if y > 17:
        return BUTTON_ACTIONS.index(("right", "a")) if x < 159 else BUTTON_ACTIONS.index(
            ("left", "up"))
    return BUTTON_ACTIONS.index(("left",)) if x > 9 else BUTTON_ACTIONS.index(("down",))


def _button_action(n: int) -> Any:
    return lambda rng: int(rng.integers(0, n))


def build_spec(frame_skip: int = 4, max_frames: int = 10_000, rom: str = "catch") -> EnvSpec:
    if rom not in GAMES:
        raise ValueError(f"option rom={rom!r}: expected one of {', '.join(GAMES)}")
    kw: dict[str, Any] = {"frame_skip": frame_skip, "max_frames": max_frames, "rom": rom}
    common: dict[str, Any] = {
        "tolerance_note": "exact: registers, WRAM, VRAM, OAM, I/O, HRAM+IE, the screen, obs, "
                          "reward and flags bit-identical at every step",
        "max_rollout_steps": max_frames // frame_skip,
        "components": {"every_opcode_vs_pyboy": l1_every_opcode},
    }
    if rom == "catch":
        verification = Verification(scripted_policy=scripted_action, random_action=random_action,
                                    state_bins=state_bins, perturb=perturb, **common)
        benchmark = Benchmark(
            reference_throughput=lazy("envport.envs.gameboy.game_bench:reference_throughput"),
            translation_throughput=lazy(
                "envport.envs.gameboy.game_bench:translation_throughput"),
            batch_sizes=(1, 2, 16),
        )
        summary = "Catch, the project's own Game Boy game (roms/catch.s): the Rust core vs PyBoy"
    else:
        # cputest reads no buttons: random ones reach P1 and IF; joypad's cursor has clamps
        # that a scripted policy drives it into.
        verification = Verification(
            random_action=_button_action(len(GAMES[rom].actions)),
            scripted_policy=joypad_scripted_action if rom == "joypad" else None, **common)
        benchmark = Benchmark()  # the game's benchmark; bench.py times the test ROMs
        summary = f"the project's ROM roms/{rom}.s as an environment: the Rust core vs PyBoy"
    return EnvSpec(
        name="gb-catch",
        summary=summary,
        reference=f"PyBoy 2.8.1 (sound_emulated=False) running roms/{rom}.s",
        make=partial(make_translation, **kw),
        make_reference=partial(make_reference, **kw),
        make_bridge=lazy("envport.core.reference:IdentityBridge"),
        verification=verification,
        benchmark=benchmark,
        training=Training(
            ppo=PPO,
            margin=0.5, margin_note="0.5 points of score (the issue's default)",
            make_vector_reference=partial(make_pyboy_vector, **kw),
            make_vector_translation=partial(make_vector, **kw),
        ),
        options=OPTIONS,
        variant=build_spec,
        modes=({"frame_skip": 1}, {"rom": "cputest"}, {"rom": "joypad"}),
        backend="host",
    )


SPEC = build_spec()
