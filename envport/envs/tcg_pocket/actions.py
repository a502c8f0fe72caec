"""The flat action space: one integer per decision, the same for both players, with a mask.

    0            END        end the turn (main phase) / finish placing Pokémon (setup)
    1, 2         ATTACK i   use the Active Pokémon's attack i
    3 .. 5       RETREAT b  retreat the Active, bringing Bench slot b (1..3) in
    6 .. 9       ATTACH s   attach the turn's Energy to slot s (0 Active, 1..3 Bench)
    10 .. 13     DISCARD s  discard a fossil in play at slot s
    14 .. 93     PLAY h,t   play the hand card at index h (0..19) on slot t (0..3): a Basic or
                            fossil goes to the Bench (t = 0; in setup the first Basic becomes
                            the Active), an evolution onto slot t, a Trainer on target slot t
                            (t = 0 when it takes none)
    94 .. 97     CHOOSE s   a pending choice of slot s: of the chooser's own side (promotion, a
                            new Active, a switch, a Bench target, an Energy attach), of the
                            opponent's side for an attack's target (T12)
    98 .. 105    ENERGY e   a pending choice of an Energy type (index into ENERGY_TYPES)
"""

from __future__ import annotations

from dataclasses import dataclass

MAX_HAND = 20  # a player holds at most 19 cards (20 in the deck, one Basic always in play)
SLOTS = 4  # 0 Active, 1..3 Bench
END = 0
ATTACK = 1
RETREAT = 3
ATTACH = 6
DISCARD = 10
PLAY = 14
CHOOSE = PLAY + MAX_HAND * SLOTS
ENERGY = CHOOSE + SLOTS
N_ACTIONS = ENERGY + 8


@dataclass(frozen=True)
class Action:
    kind: str  # end | attack | retreat | attach | discard | play | choose | energy
    a: int = 0  # attack index, bench slot, slot, hand index, energy index
    b: int = 0  # PLAY: the target slot

    def __str__(self) -> str:
        return f"{self.kind}({self.a}{f', {self.b}' if self.kind == 'play' else ''})"


def decode(index: int) -> Action:
    if not 0 <= index < N_ACTIONS:
        raise ValueError(f"action {index} is outside 0..{N_ACTIONS - 1}")
    if index == END:
        return Action("end")
    if index < RETREAT:
        return Action("attack", index - ATTACK)
    if index < ATTACH:
        return Action("retreat", index - RETREAT + 1)
    if index < DISCARD:
        return Action("attach", index - ATTACH)
    if index < PLAY:
        return Action("discard", index - DISCARD)
    if index < CHOOSE:
        h, t = divmod(index - PLAY, SLOTS)
        return Action("play", h, t)
    if index < ENERGY:
        return Action("choose", index - CHOOSE)
    return Action("energy", index - ENERGY)


def encode(action: Action) -> int:
    base = {"end": END, "attack": ATTACK, "retreat": RETREAT - 1, "attach": ATTACH,
            "discard": DISCARD, "choose": CHOOSE, "energy": ENERGY}
    if action.kind == "play":
        return PLAY + action.a * SLOTS + action.b
    if action.kind == "end":
        return END
    return base[action.kind] + action.a
