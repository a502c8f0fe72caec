"""The pokemon-gen1 benchmark's pieces: the random legal policy both sides play, the Showdown
row, the memory figure; the full JAX timing (a compilation per batch size) is ``slow``."""

from __future__ import annotations

import dataclasses
import json
import math
import os
import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from envport.envs.pokemon_gen1 import bench
from envport.envs.pokemon_gen1 import engine as E
from envport.envs.pokemon_gen1 import state as S


def test_the_policy_plays_only_legal_choices_and_switches_only_when_forced():
    policy = jax.jit(jax.vmap(bench._policy))
    keys = jax.random.split(jax.random.key(0), 4000)
    move_request = np.zeros(E.N_CHOICES, bool)
    move_request[[0, 2, 3, 6, 7]] = True
    forced = np.zeros(E.N_CHOICES, bool)
    forced[[5, 8]] = True
    for mask, allowed in ((move_request, {0, 2, 3}), (forced, {5, 8})):
        picks = np.asarray(policy(keys, jnp.broadcast_to(jnp.asarray(mask), (4000, 11))))
        assert set(picks.tolist()) == allowed
        counts = np.bincount(picks, minlength=E.N_CHOICES)[sorted(allowed)]
        assert counts.min() > 0.8 * 4000 / len(allowed)  # about uniform


def test_memory_is_the_layout_size_of_one_battle():
    expected = 0
    for group, fields in S.LAYOUT.items():
        lead = S._LEAD[group]
        for dtype, shape in fields.values():
            expected += math.prod(lead + shape) * np.dtype(dtype).itemsize
    m = bench.memory()
    assert m["battle_bytes"] == expected
    assert m["env_state_bytes"] == expected + 2 * S.TEAM_SIZE  # the seen mask, bool[2, 6]


def test_showdown_selfplay_row_counts_battles_and_turns():
    row = bench.showdown_row(1.0)
    assert row["battles"] > 0 and row["turns"] > row["battles"]
    assert row["turns_per_s"] == pytest.approx(row["turns"] / row["seconds"])


@pytest.mark.slow
def test_a_small_run_measures_both_sides():
    result = bench.run([1, 8], seconds=1.0, repeats=1)
    assert [r["batch_size"] for r in result["jax"]] == [1, 8]
    assert all(r["turns_per_s"] > 0 and r["battles"] >= 0 for r in result["jax"])
    assert "best ratio" in bench.table(result)


@pytest.mark.parametrize("argv", [["--seconds", "0"], ["--repeats", "0"],
                                  ["--batch-sizes", "0"], ["--devices", "0"]])
def test_bad_arguments_exit_2_naming_the_flag(argv, capsys):
    with pytest.raises(SystemExit) as e:
        bench.main(argv)
    assert e.value.code == 2
    assert argv[0] in capsys.readouterr().err


def test_devices_default_to_the_cores_on_cpu_and_to_every_accelerator_elsewhere():
    assert bench.default_devices("cpu", 1) == (os.cpu_count() or 1)
    # a GPU machine's 16 cores are not its device count: one H100 is one device
    assert bench.default_devices("gpu", 1) == 1
    assert bench.default_devices("gpu", 4) == 4


def test_the_table_of_a_run_without_showdown_gives_no_ratio():
    row = {"backend": "jax", "batch_size": 4096, "battles_per_s": 10.0, "turns_per_s": 480.0,
           "steps_per_second": 500.0, "devices": 1}
    result = {"showdown": None, "jax": [row], "ratio_turns_best": None,
              "memory": {"battle_bytes": 758, "env_state_bytes": 770},
              "machine": {"jax_backend": "gpu", "load_average": (0.0, 0.0, 0.0)}}
    text = bench.table(result)
    assert "showdown " not in text and "x\n" not in text
    assert "Showdown not run (--no-reference)" in text and "480" in text


@pytest.mark.slow
def test_the_batch_split_over_two_devices_counts_both_shards(tmp_path):
    """``--devices 2`` in a process with one device: the command restarts itself with two XLA
    CPU devices, and the batch row says it ran on both."""
    out = tmp_path / "bench.json"
    subprocess.run([sys.executable, "-m", "envport.envs.pokemon_gen1.bench", "--seconds", "1",
                    "--repeats", "1", "--batch-sizes", "1", "8", "--devices", "2",
                    "--json", str(out)], check=True, timeout=900,
                   env={k: v for k, v in os.environ.items() if k != "XLA_FLAGS"})
    result = json.loads(out.read_text())
    assert [(r["batch_size"], r["devices"]) for r in result["jax"]] == [(1, 1), (8, 2)]
    assert result["machine"]["jax_devices"] == 2
    assert all(r["turns_per_s"] > 0 for r in result["jax"])


def test_ended_battles_get_the_fresh_ones_in_batch_order_and_the_rest_wait():
    n, m = 7, 2
    battles = jax.tree_util.tree_map(lambda x: jnp.broadcast_to(jnp.asarray(x), (n, *x.shape)),
                                     S.empty(jnp))
    ended = np.array([False, True, False, True, True, False, True])
    battles = dataclasses.replace(battles, ended=jnp.asarray(ended),
                                  turn=jnp.arange(n, dtype=jnp.int16))
    fresh = jax.tree_util.tree_map(lambda x: jnp.broadcast_to(jnp.asarray(x), (m, *x.shape)),
                                   S.empty(jnp))
    fresh = dataclasses.replace(fresh, turn=jnp.asarray([100, 101], jnp.int16))
    out = bench.refill_ended(battles, fresh)
    # battles 1 and 3 (the first two ended) restart; 4 and 6 stay ended for the next step
    assert np.asarray(out.turn).tolist() == [0, 100, 2, 101, 4, 5, 6]
    assert np.asarray(out.ended).tolist() == [False, False, False, False, True, False, True]
