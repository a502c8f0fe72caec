"""The JAX engine's mutants that are equivalent to it, with the reason (``envport mutate
tcg-pocket``; the README's "envport mutate" has the runs that found them).

Keyed by (file, original source line, mutation), plus the column (or ``EVERY_SITE``) where the
line has several sites of that mutation (``envport mutate`` refuses a key that would cover
sites its reason was not written for); applied only to mutants that survive every layer in
every declared mode, so an entry never overrides a kill. Kinds: "proof"
holds for every input; "reachable" holds on every state a game can reach from a reset (and on
the reference's states the bridge injects), not on arbitrary arrays.
"""

from __future__ import annotations

from typing import Any

from envport.verify.mutation.equivalence import EVERY_SITE

# cards.py fills these per-card tables for Pokémon only (``if _c["kind"] != "pokemon":
# continue``; HP for the fossils too, ids 216-218), and no Pokémon's id is above 225 (of 232):
# a table two entries shorter (``N_CARDS + 1 -> N_CARDS - 1``: ids 0-230) still holds every
# value written.
_SHORTER_TABLE = (
    "every value written is kept: the table is filled for Pokémon (and HP for fossils) only, "
    "whose ids are at most 225 (of 232), and the two-shorter table holds ids 0-230. Its "
    "reader (rules.py, a jnp copy at import) indexes {reader}; JAX clamps an out-of-range "
    "gather index to the last entry, id 230 (Poké Ball, a Trainer), whose entry is 0, the "
    "value the original holds at ids 231-232 (Red Card, Professor's Research). No other "
    "module reads it")
_TABLES = {
    "HP = np.zeros(N_CARDS + 1, np.int16)":
        "HP[c] with c a card in play (a Pokémon or a fossil, ids at most 225; or 0)",
    "EVOLVES_FROM = np.zeros(N_CARDS + 1, np.int16)  # the card id it evolves from, 0: none":
        "EVOLVES_FROM[hand_cards], any card in hand (ids up to 232)",
    "ATK_AMOUNT = np.zeros((N_CARDS + 1, MAX_ATTACKS), np.int16)":
        "ATK_AMOUNT[attacker, i] with the attacker the Active Pokémon (an id of at most 225)",
}


def known_equivalent() -> dict[tuple[Any, ...], tuple[str, str]]:
    out: dict[tuple[Any, ...], tuple[str, str]] = {
        ("cards.py", line, "+ -> -"): ("proof", _SHORTER_TABLE.format(reader=reader))
        for line, reader in _TABLES.items()}
    out[("game.py", "return jnp.stack([r0, -r0]).astype(jnp.float32)", "negation removed")] = (
        "proof", "only player 1's reward changes, and nothing reads it: the engine's one "
        "caller of game.step (jax_env.TcgPocket.step) keeps rewards[0], player 0's; the "
        "two-player API (pettingzoo.TcgTwoPlayer) and training derive player 1's as -r from it")
    out[("rules.py", "ok = (zcount(deck) > 0) & (zcount(hand) < params.hand_limit)",
         "> -> >=")] = (
        "reachable", "drawing from an empty deck changes nothing either way: zones are "
        "left-packed (zpop shifts the rest left, zpush writes at the count), so an empty deck "
        "is all 0 and zpop returns card 0 and the same zeros; zpush writes that 0 at index "
        "count(hand), which is 0 already (or past the end of the row when the hand is full: "
        "no write). So deck and hand are unchanged, and draw changes nothing else")
    out[("rules.py", "evo = h_ok & IS_POKEMON[hand_cards] & (STAGE[hand_cards] > 0)",
         "& -> |", EVERY_SITE)] = (
        "reachable", "evo counts only where match & target_ok hold, which need "
        "EVOLVES_FROM[h] to equal a card in play (target_ok: tops != 0), so a card in hand "
        "whose EVOLVES_FROM is a card id: cards.py writes it for Stage 1 and 2 Pokémon only, "
        "and for those IS_POKEMON and STAGE > 0 hold; h_ok (index < count(hand)) holds for "
        "every card in hand because the hand is left-packed (an index past the count holds "
        "card 0, whose EVOLVES_FROM is 0). Where evo counts, all three terms are true, so "
        "either `&` made `|` (both mutants share this key) gives the same mask")
    out[("rng.py", "return count + jnp.where(on & h, 1, 0), jnp.where(on, r2, r)",
         "arguments 1 and 2 swapped", 15)] = (
        "proof", "jnp.where(1, on & h, 0) is the bool on & h (the condition 1 is always "
        "true), promoted to the int32 count's type by the addition: True adds 1 and False 0, "
        "as jnp.where(on & h, 1, 0) does, and the sum keeps count's dtype (int32), the "
        "fori_loop carry's")
    tens = (
        "reachable", "every damage counter is a multiple of 10, so `damage > 1` and `damage > 0` "
        "agree on every state: the card table's damage, bonuses (10, 20, 30, 60...), "
        "reductions (20), per-count damage (20, 30, 50 a count), Poison (10), Burn (20), "
        "recoil, Bench and snipe damage and heals are all multiples of 10 (``cards.json``), "
        "and so is every damage the verifier injects (reference states; the perturbed L2 "
        "states and the component cases set 10 * k). Keyed by column: the line's other 0 (an "
        "index) is not covered")
    out[("cards.py", "RETREAT = np.zeros(N_CARDS + 1, np.int8)", "1 -> 2")] = (
        "reachable", "the table one entry longer (ids 0-233) holds the same value at every "
        "id 0-232 (the fill loop writes ids 1-232 only) and 0 at id 233; its one reader "
        "(rules.retreat_cost, a jnp copy at import) indexes RETREAT[card_at(s, p, 0)], a card "
        "id of the Active's stack, 0-232 on every state (the stacks hold dealt cards or 0; "
        "an index above the end clamps to the last entry, 0 in both: card 232 is a Trainer). "
        "Not for arbitrary arrays: a negative index counts from the end, one entry apart")
    out[("rules.py", "defender & (s.damage[o, 0] > 0),", "0 -> 1", 29)] = tens
    out[("rules.py", "return jnp.stack([extra >= ATK_N[attacker, i], s.damage[p, 0] > 0,",
         "0 -> 1", 64)] = tens
    return out
