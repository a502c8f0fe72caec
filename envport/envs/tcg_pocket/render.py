"""A text view of the board, from one player's side (their hand shown, the opponent's hidden) or
from above (``viewer=None``: everything, for logs and debugging)."""

from __future__ import annotations

from envport.envs.tcg_pocket import rules
from envport.envs.tcg_pocket.cards import ENERGY_TYPES
from envport.envs.tcg_pocket.state import GameState, InPlay, Player

SYMBOL = {"Grass": "G", "Fire": "R", "Water": "W", "Lightning": "L", "Psychic": "P",
          "Fighting": "F", "Darkness": "D", "Metal": "M"}


def pokemon_line(p: InPlay | None) -> str:
    if p is None:
        return "-"
    energy = "".join(SYMBOL[t] * k for t, k in zip(ENERGY_TYPES, p.energy, strict=True))
    conditions = f" ({', '.join(sorted(p.conditions))})" if p.conditions else ""
    return (f"{p.name} {rules.hp(p) - p.damage}/{rules.hp(p)} HP"
            f"{f' [{energy}]' if energy else ''}{conditions}")


def side_lines(pl: Player, label: str, show_hand: bool, hide_board: bool) -> list[str]:
    zone = f"{pl.energy_current or '-'} (next {pl.energy_next or '-'})"
    hand = ", ".join(pl.hand) if show_hand else f"{len(pl.hand)} cards"
    active = "(hidden)" if hide_board else pokemon_line(pl.active)
    bench = "(hidden)" if hide_board else " | ".join(pokemon_line(b) for b in pl.bench)
    return [f"{label}: {pl.points} points, deck {len(pl.deck)}, discard {len(pl.discard)}, "
            f"Energy {zone}",
            f"  Active: {active}", f"  Bench:  {bench}", f"  Hand:   {hand}"]


def render(state: GameState, viewer: int | None = None) -> str:
    head = (f"turn {state.turn} ({state.stage}), player {state.current} to play"
            if not state.over else f"game over after turn {state.turn}: "
            f"{'draw' if state.winner == -1 else f'player {state.winner} wins'} "
            f"({state.end_reason})")
    if state.pending:
        d = state.pending[0]
        head += f"; waiting for player {d.player}: {d.kind}"
    lines = [head]
    hide = state.stage == "setup"
    for p in (1, 0) if viewer in (None, 0) else (0, 1):
        mine = viewer is None or viewer == p
        label = f"player {p}" + (" (you)" if viewer == p else "")
        lines += side_lines(state.players[p], label, show_hand=mine,
                            hide_board=hide and not mine)
    return "\n".join(lines)
