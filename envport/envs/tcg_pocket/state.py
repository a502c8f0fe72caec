"""The state of a game: plain mutable records, copied with ``copy.deepcopy``."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from envport.envs.tcg_pocket.cards import ENERGY_TYPES
from envport.envs.tcg_pocket.config import RulesConfig

BENCH_SIZE = 3
CONDITIONS = ("poisoned", "burned", "asleep", "paralyzed", "confused")
EXCLUSIVE = ("asleep", "paralyzed", "confused")  # these replace each other; the newest stays


@dataclass
class InPlay:
    """A Pokémon (or a fossil) in play: its card on top of the cards it evolved from."""

    stack: list[str]  # bottom first; stack[-1] is the card that counts
    entered_turn: int
    energy: list[int] = field(default_factory=lambda: [0] * len(ENERGY_TYPES))
    damage: int = 0
    conditions: set[str] = field(default_factory=set)  # only while Active
    evolved_turn: int = -1
    # attack effects "during your opponent's next turn" (T13): name -> [last turn, amount];
    # like Special Conditions they end when the Pokémon leaves the Active Spot or evolves
    effects: dict[str, list[int]] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.stack[-1]

    @property
    def energy_count(self) -> int:
        return sum(self.energy)


@dataclass
class Player:
    deck: list[str]
    energy_types: tuple[str, ...]
    hand: list[str] = field(default_factory=list)
    discard: list[str] = field(default_factory=list)
    active: InPlay | None = None
    bench: list[InPlay | None] = field(default_factory=lambda: [None] * BENCH_SIZE)
    energy_current: str | None = None
    energy_next: str | None = None
    points: int = 0
    # per turn
    attached_energy: bool = False
    played_supporter: bool = False
    retreated: bool = False
    giovanni: bool = False
    blaine: bool = False
    x_speed: int = 0
    supporters_blocked_until: int = -1  # an attack's "can't use Supporters" (last turn)
    # information the player was shown this turn (Hand Scope, Pokédex, an attack's reveal)
    revealed: dict[str, list[str]] = field(default_factory=dict)

    def slot(self, s: int) -> InPlay | None:
        return self.active if s == 0 else self.bench[s - 1]

    def in_play(self) -> list[tuple[int, InPlay]]:
        slots = [(0, self.active), *((i + 1, b) for i, b in enumerate(self.bench))]
        return [(s, p) for s, p in slots if p is not None]

    def benched(self) -> list[tuple[int, InPlay]]:
        return [(s, p) for s, p in self.in_play() if s > 0]


@dataclass
class Decision:
    """A choice someone must make before the game goes on."""

    player: int
    kind: str  # setup | promote | new_active | retreat_energy
    data: dict[str, Any] = field(default_factory=dict)


@dataclass
class GameState:
    config: RulesConfig
    players: list[Player]
    first: int = 0
    current: int = 0
    turn: int = 0  # 0 during setup; turn 1 is the first player's first turn
    stage: str = "setup"  # setup | main | checkup | next_turn | over
    pending: list[Decision] = field(default_factory=list)
    winner: int | None = None  # 0, 1, or -1 for a draw, once stage == "over"
    end_reason: str = ""
    log: list[str] = field(default_factory=list)
    attack_open: bool = False  # an attack waits for a choice before its Knock Outs
    rng: Any = field(default=None, repr=False)  # the game's one Rng (rng.py)

    @property
    def over(self) -> bool:
        return self.stage == "over"

    def to_act(self) -> int | None:
        """Whose decision the game waits for (None once it is over)."""
        if self.over:
            return None
        return self.pending[0].player if self.pending else self.current
