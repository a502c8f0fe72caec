"""Two-player games as PettingZoo ``ParallelEnv``s, over a jittable two-player functional API.

``parallel_env("pokemon-gen1")`` / ``parallel_env("tcg-pocket")``: a PettingZoo
:class:`pettingzoo.ParallelEnv` with agents ``player_0`` and ``player_1``. Each agent's
observation is ``{"observation": its own view, "action_mask": int8[A]}`` (gymnasium ``Dict`` of
two ``Box``es), its action a ``Discrete(A)`` integer. Each view shows only what that player
knows: the environments' own per-player observations (Pokemon: own team in full, the
opponent's as revealed; TCG Pocket: the opponent's hand and both decks hidden). Rewards are
zero-sum, ``+1`` / ``-1`` at a win, ``0`` for a tie; both agents terminate together at the end
of the game, or are truncated together after ``max_cycles`` steps (``None``: never; PettingZoo's
``parallel_api_test`` sets it). ``reset(seed=s)`` starts from ``jax.random.key(s)``; a reset
without a seed draws its key from the previous one (fixed by the last seed given, else by 0).

**The functional API** (what training uses, batched with ``jax.vmap``): :func:`two_player`
returns a :class:`TwoPlayer` game with

* ``reset(key, params=None) -> (state, Joint)``
* ``step(key, state, actions: int32[2], params=None) -> (state, Joint)``

both pure and jittable, where :class:`Joint` holds both players' observations ``[2, D]``, legal
masks ``bool[2, A]``, rewards ``float32[2]`` and ``terminated`` / ``truncated``. They are the
environments' own functional cores (``env.reset`` / ``env.step``) with both players' views
read off the same state:

* ``pokemon-gen1``: simultaneous choices; the joint action is the env's ``int32[2]``, the
  observations its ``[2, 572]`` rows and the masks ``info["action_mask"]``. A player with
  nothing to choose (the other side's forced switch) has only ``NO_CHOICE`` (10) legal. A choice
  the mask does not allow plays the legal choice ``c mod n`` (the env's rule).
* ``tcg-pocket``: turn-based; only the action of the player to act is applied (``to_act``), the
  other player's mask is the single ``noop`` action 0 (its action is ignored), both masks are
  empty once the game is over. An action the mask does not allow changes nothing (the env's
  rule). Observations are ``encode.observation_vector(state, p)`` for p = 0, 1.

The PettingZoo adapter steps one game on the host with the game's compiled functions
(:meth:`TwoPlayer.host_functions`); for ``pokemon-gen1`` that is the engine's shared compiled
step (``engine.compiled``) between two small jitted functions, the same composition as
``env.transition``, so a process that already compiled the engine does not compile it again.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

import gymnasium
import jax
import jax.numpy as jnp
import numpy as np
from pettingzoo import ParallelEnv

from envport.core.api import Environment, StepResult

AGENTS = ("player_0", "player_1")
Array = jax.Array


class Joint(NamedTuple):
    """Both players' view of one moment of a two-player game."""

    obs: Array  # [2, D]: row p is player p's observation
    mask: Array  # bool [2, A]: row p is player p's legal actions
    reward: Array  # float32 [2]: this step's rewards (zero-sum)
    terminated: Array  # bool
    truncated: Array  # bool


_HOST: dict[type, tuple[Callable[..., Any], Callable[..., Any]]] = {}


class TwoPlayer:
    """A two-player game as pure functions (see the module docstring)."""

    name: str
    n_actions: int
    noop: int  # an action that is legal whenever a player has nothing to choose

    def __init__(self, env: Any, per_player: bool) -> None:
        """``per_player``: the env's observation space already is one player's view (else its
        leading axis is the two players)."""
        self.env = env
        space = env.observation_space()
        self.obs_shape: tuple[int, ...] = tuple(space.shape if per_player else space.shape[1:])
        self.obs_dtype = np.dtype(space.dtype)
        self.obs_low, self.obs_high = space.low, space.high

    def reset(self, key: Array, params: Any = None) -> tuple[Any, Joint]:
        raise NotImplementedError

    def step(self, key: Array, state: Any, actions: Array, params: Any = None
             ) -> tuple[Any, Joint]:
        raise NotImplementedError

    def host_functions(self) -> tuple[Callable[..., Any], Callable[..., Any]]:
        """(reset, step) compiled for stepping one game from the host, one pair per game class
        and process (the environments hold no state of their own); by default ``jax.jit`` of
        :meth:`reset` and :meth:`step`."""
        kind = type(self)
        if kind not in _HOST:
            _HOST[kind] = self._compile_host()
        return _HOST[kind]

    def _compile_host(self) -> tuple[Callable[..., Any], Callable[..., Any]]:
        return jax.jit(self.reset), jax.jit(self.step)


class PokemonTwoPlayer(TwoPlayer):
    name = "pokemon-gen1"

    def __init__(self) -> None:
        from envport.envs.pokemon_gen1 import engine as E
        from envport.envs.pokemon_gen1.env import PokemonGen1

        super().__init__(PokemonGen1(), per_player=False)
        self.n_actions = E.N_CHOICES
        self.noop = E.NO_CHOICE

    def reset(self, key: Array, params: Any = None) -> tuple[Any, Joint]:
        from envport.envs.pokemon_gen1.env import masks_of

        state, obs = self.env.reset(key, params)
        return state, Joint(obs, masks_of(state.battle), jnp.zeros(2, jnp.float32),
                            jnp.asarray(False), jnp.asarray(False))

    def step(self, key: Array, state: Any, actions: Array, params: Any = None
             ) -> tuple[Any, Joint]:
        res = self.env.step(key, state, jnp.asarray(actions, jnp.int32), params)
        r = jnp.asarray(res.reward, jnp.float32)
        return res.state, Joint(res.obs, res.info["action_mask"], jnp.stack([r, -r]),
                                jnp.asarray(res.terminated), jnp.asarray(res.truncated))

    def _compile_host(self) -> tuple[Callable[..., Any], Callable[..., Any]]:
        from envport.envs.pokemon_gen1 import engine as E
        from envport.envs.pokemon_gen1 import env as V
        from envport.envs.pokemon_gen1 import spec_support as SS

        @jax.jit
        def before(state: Any, actions: Array) -> Array:
            return SS.resolve(actions, V.masks_of(state.battle), jnp)

        @jax.jit
        def after(state: Any, nb: Any) -> tuple[Any, Joint]:
            # env.transition after its engine step, term for term
            seen = SS.seen_after(nb, state.seen, jnp)
            new = V.EnvState(battle=nb, seen=seen)
            masks = V.masks_of(nb)
            obs = SS.observe(SS.flat_state(nb, seen, jnp), masks, jnp)
            r = V.p1_reward(state.battle.ended, nb)
            return new, Joint(obs, masks, jnp.stack([r, -r]), jnp.asarray(nb.ended, bool),
                              jnp.asarray(False))

        def step(key: Array, state: Any, actions: Array, params: Any = None
                 ) -> tuple[Any, Joint]:
            c = before(state, jnp.asarray(actions, jnp.int32))
            nb, _ = E.compiled(False)(state.battle, c[0], c[1])
            return after(state, nb)

        return jax.jit(self.reset), step


class TcgTwoPlayer(TwoPlayer):
    name = "tcg-pocket"

    def __init__(self) -> None:
        import envport
        from envport.envs.tcg_pocket.jax_engine.actions import N_ACTIONS

        # The SPEC's engine: its resets deal the reference's decks of the pool it covers.
        super().__init__(envport.make("tcg-pocket"), per_player=True)
        self.n_actions = N_ACTIONS
        self.noop = 0

    def _joint(self, s: Any, reward: Array, terminated: Array) -> Joint:
        from envport.envs.tcg_pocket.jax_engine import encode, game

        players = jnp.arange(2)
        obs = jnp.stack([encode.observation_vector(s, players[p]) for p in (0, 1)])
        legal = jnp.stack([game.action_mask(s, players[p]) for p in (0, 1)])
        who = game.to_act(s)
        idle = (who >= 0) & (players != who)
        noop = jnp.arange(self.n_actions) == self.noop
        mask = jnp.where(idle[:, None], noop[None, :], legal)
        return Joint(obs, mask, reward, jnp.asarray(terminated), jnp.asarray(False))

    def reset(self, key: Array, params: Any = None) -> tuple[Any, Joint]:
        state, _ = self.env.reset(key, params)
        return state, self._joint(state, jnp.zeros(2, jnp.float32), jnp.asarray(False))

    def to_act(self, state: Any) -> Array:
        """int32: the player who must act (-1 once the game is over)."""
        from envport.envs.tcg_pocket.jax_engine import game

        return game.to_act(state)

    def opponent_action(self, key: Array, state: Any, opponent: int | Array) -> Array:
        """int32: the fixed opponent ``OPPONENTS[opponent]``'s action at ``state`` (for the
        player to act), from its own split of ``key``. A Python index computes that opponent
        alone; a traced one (a batch of games against both) computes both and picks."""
        from envport.envs.tcg_pocket.jax_engine import agents

        keys = dict(zip(OPPONENTS, jax.random.split(key), strict=True))
        players = {"heuristic": agents.heuristic_action, "random": agents.random_action}
        if isinstance(opponent, int):
            name = OPPONENTS[opponent]
            return players[name](keys[name], state)
        return jnp.stack([players[o](keys[o], state) for o in OPPONENTS])[opponent]

    def step(self, key: Array, state: Any, actions: Array, params: Any = None
             ) -> tuple[Any, Joint]:
        from envport.envs.tcg_pocket.jax_engine import game

        actions = jnp.asarray(actions, jnp.int32)
        action = actions[jnp.clip(game.to_act(state), 0, 1)]
        res = self.env.step(key, state, action, params)
        r = jnp.asarray(res.reward, jnp.float32)
        return res.state, self._joint(res.state, jnp.stack([r, -r]), res.terminated)


GAMES: dict[str, Callable[[], TwoPlayer]] = {"pokemon-gen1": PokemonTwoPlayer,
                                              "tcg-pocket": TcgTwoPlayer}


def two_player(name: str) -> TwoPlayer:
    """The jittable two-player functional API of environment ``name``."""
    if name not in GAMES:
        raise ValueError(f"no two-player adapter for {name!r}; available: {sorted(GAMES)}")
    return GAMES[name]()


class TwoPlayerParallelEnv(ParallelEnv):
    """PettingZoo's parallel API over a :class:`TwoPlayer` game (see the module docstring)."""

    possible_agents: list[str] = list(AGENTS)  # noqa: RUF012 (PettingZoo's attribute)

    def __init__(self, game: TwoPlayer, max_cycles: int | None = None,
                 render_mode: str | None = None) -> None:
        if render_mode is not None:
            raise ValueError(f"render_mode {render_mode!r}: this adapter renders nothing "
                             "(render_mode must be None)")
        if max_cycles is not None and max_cycles < 1:
            raise ValueError(f"max_cycles must be a positive number of steps, got {max_cycles}")
        self.game = game
        self.max_cycles = max_cycles
        self.render_mode = None
        self.metadata = {"name": f"{game.name}_v0", "render_modes": [],
                         "is_parallelizable": True}
        self.agents: list[str] = []
        self._reset_fn, self._step_fn = game.host_functions()
        obs = gymnasium.spaces.Box(game.obs_low, game.obs_high, game.obs_shape, game.obs_dtype)
        mask = gymnasium.spaces.Box(0, 1, (game.n_actions,), np.int8)
        self._obs_space = {a: gymnasium.spaces.Dict({"observation": obs, "action_mask": mask})
                           for a in AGENTS}
        self._act_space = {a: gymnasium.spaces.Discrete(game.n_actions) for a in AGENTS}
        self._key = jax.random.key(0)
        self._state: Any = None
        self._cycles = 0

    def observation_space(self, agent: str) -> gymnasium.spaces.Space:
        return self._obs_space[self._agent(agent)]

    def action_space(self, agent: str) -> gymnasium.spaces.Space:
        return self._act_space[self._agent(agent)]

    @staticmethod
    def _agent(agent: str) -> str:
        if agent not in AGENTS:
            raise ValueError(f"unknown agent {agent!r}; agents are {list(AGENTS)}")
        return agent

    def _views(self, joint: Joint) -> dict[str, dict[str, np.ndarray]]:
        obs = np.asarray(joint.obs).astype(self.game.obs_dtype, copy=False)
        mask = np.asarray(joint.mask).astype(np.int8)
        return {a: {"observation": obs[i], "action_mask": mask[i]} for i, a in enumerate(AGENTS)}

    def reset(self, seed: int | None = None, options: Mapping[str, Any] | None = None
              ) -> tuple[dict[str, Any], dict[str, Any]]:
        if seed is not None:
            self._key = jax.random.key(int(seed))
        self._key, key = jax.random.split(self._key)
        self._state, joint = self._reset_fn(key)
        self.agents = list(AGENTS)
        self._cycles = 0
        return self._views(joint), {a: {} for a in AGENTS}

    def step(self, actions: Mapping[str, Any]) -> tuple[dict, dict, dict, dict, dict]:
        if not self.agents:
            raise RuntimeError("step after the game ended: call reset()")
        missing = [a for a in self.agents if a not in actions]
        if missing:
            raise ValueError(f"step needs an action for every live agent; missing {missing}")
        joint_action = np.zeros(2, np.int32)
        for i, a in enumerate(AGENTS):
            x = np.asarray(actions.get(a, self.game.noop))
            if (x.ndim != 0 or not np.issubdtype(x.dtype, np.integer)
                    or not 0 <= int(x) < self.game.n_actions):
                raise ValueError(f"action {actions.get(a)!r} of {a} is not an integer in "
                                 f"Discrete({self.game.n_actions})")
            joint_action[i] = int(x)
        self._key, key = jax.random.split(self._key)
        self._state, joint = self._step_fn(key, self._state, jnp.asarray(joint_action))
        self._cycles += 1
        terminated = bool(joint.terminated)
        truncated = bool(joint.truncated) or (self.max_cycles is not None
                                              and self._cycles >= self.max_cycles
                                              and not terminated)
        reward = np.asarray(joint.reward)
        rewards = {a: float(reward[i]) for i, a in enumerate(AGENTS)}
        out: tuple[dict, dict, dict, dict, dict] = (self._views(joint), rewards,
               dict.fromkeys(AGENTS, terminated), dict.fromkeys(AGENTS, truncated),
               {a: {} for a in AGENTS})
        if terminated or truncated:
            self.agents = []
        return out

    @property
    def state_jax(self) -> Any:
        """The current JAX state of the game (the full state: for tools, not for players)."""
        return self._state

    def close(self) -> None:
        self._state = None


def parallel_env(name: str, max_cycles: int | None = None,
                 render_mode: str | None = None) -> TwoPlayerParallelEnv:
    """PettingZoo ``ParallelEnv`` of two-player environment ``name`` (``pokemon-gen1``,
    ``tcg-pocket``)."""
    return TwoPlayerParallelEnv(two_player(name), max_cycles=max_cycles, render_mode=render_mode)


# ---- one player against a fixed opponent: the single-agent view training needs ---------------

OPPONENTS = ("heuristic", "random")
# Self-play: the opponent is a pool of the run's own past policies (:class:`VsPool`). Trained
# against, never evaluated against (a pool run is evaluated against the fixed opponents).
POOL = "pool"
TRAINING_OPPONENTS = (*OPPONENTS, POOL)


class VsOpponent(Environment[Any, Any]):
    """Player 0 of a simultaneous two-player game (``pokemon-gen1``) against a fixed JAX
    opponent, as an envport ``Environment`` (``reset`` / ``sample_draws`` / ``transition``):
    the observation is player 0's row, the action ``Discrete(A)``, the reward player 0's, and
    ``info["action_mask"]`` player 0's mask (also in its observation). The opponent acts on the
    same state with ``agents.heuristic_jax`` or ``agents.random_jax``, from the step's key.
    Jittable and vmappable like any envport environment; :meth:`action_mask` is the legal-action
    hook masked PPO reads (``envport.train.backends.action_mask_of``). ``envport train ENV
    --opponent NAME`` trains on it (``envport.train.backends.translation``)."""

    name = "pokemon-gen1-vs-opponent"
    # The games it can play: simultaneous ones, where the opponent chooses on the same state.
    GAMES: tuple[str, ...] = ("pokemon-gen1",)

    def __init__(self, name: str = "pokemon-gen1", opponent: str = "heuristic") -> None:
        self.check(name, opponent)
        if opponent == POOL and not isinstance(self, VsPool):
            raise ValueError("the self-play opponent is envport.pettingzoo.VsPool(name, policy)")
        self.game = two_player(name)
        self.opponent = opponent

    @classmethod
    def check(cls, name: str, opponent: str) -> None:
        """ValueError unless ``name`` can be played against the fixed opponent ``opponent``."""
        if name not in cls.GAMES:
            raise ValueError(f"{name} has no fixed-opponent training: the games with one are "
                             f"{', '.join(cls.GAMES)}")
        if opponent not in TRAINING_OPPONENTS:
            raise ValueError(f"opponent must be one of {', '.join(TRAINING_OPPONENTS)}, got "
                             f"{opponent!r}")

    def default_params(self) -> Any:
        return self.game.env.default_params()

    def observation_space(self, params: Any = None) -> Any:
        from envport.core.spaces import Box

        return Box(float(self.game.obs_low), float(self.game.obs_high), self.game.obs_shape)

    def action_space(self, params: Any = None) -> Any:
        from envport.core.spaces import Discrete

        return Discrete(self.game.n_actions)

    def reset(self, key: Array, params: Any = None) -> tuple[Any, Array]:
        state, joint = self.game.reset(key, params)
        return state, joint.obs[0]

    def sample_draws(self, key: Array, state: Any, params: Any = None) -> Array:
        return key

    def action_mask(self, state: Any, params: Any = None) -> Array:
        """Player 0's legal choices ``bool[A]`` at ``state`` (what ``info["action_mask"]`` of
        the step that led there holds, and the mask columns of the observation)."""
        from envport.envs.pokemon_gen1.env import masks_of

        return masks_of(state.battle)[0]

    def fixed_player_action(self, key: Array, state: Any, player: str) -> Array:
        """Player 0's choice at ``state`` by the fixed player ``player`` (one of
        :data:`OPPONENTS`): what ``envport imitate`` clones (``envport.train.imitation``)."""
        from envport.envs.pokemon_gen1 import agents

        if player == "heuristic":
            return agents.heuristic_jax(state)[0]
        return agents.random_jax(key, state)[0]

    def transition(self, state: Any, action: Array, draws: Any, params: Any = None
                   ) -> StepResult:
        from envport.envs.pokemon_gen1 import agents

        k_opp, k_env = jax.random.split(draws)
        if self.opponent == "heuristic":
            theirs = agents.heuristic_jax(state)[1]
        else:
            theirs = agents.random_jax(k_opp, state)[1]
        return self._play(k_env, state, action, theirs, params)

    def transition_against(self, state: Any, action: Array, draws: Any, opponent: Array,
                           params: Any = None) -> StepResult:
        """:meth:`transition` against the opponent ``OPPONENTS[opponent]`` given as a (traced)
        index, so one compiled step serves battles against every opponent at once (the
        evaluation's); both opponents' choices are computed, the index picks one."""
        from envport.envs.pokemon_gen1 import agents

        k_opp, k_env = jax.random.split(draws)
        theirs = jnp.where(jnp.asarray(opponent) == OPPONENTS.index("heuristic"),
                           agents.heuristic_jax(state)[1], agents.random_jax(k_opp, state)[1])
        return self._play(k_env, state, action, theirs, params)

    def transition_given(self, state: Any, action: Array, theirs: Array, params: Any = None
                         ) -> StepResult:
        """The step with the opponent's choice ``theirs`` given, for a batch that draws the
        opponent's randomness itself (``pokemon_gen1.vector_engine``). The game's step takes
        no randomness of its own (its draws are in the state), so its key is a constant."""
        return self._play(jax.random.key(0), state, action, theirs, params)

    def _play(self, key: Array, state: Any, action: Array, theirs: Array, params: Any
              ) -> StepResult:
        actions = jnp.stack([jnp.asarray(action, jnp.int32), theirs])
        new, joint = self.game.step(key, state, actions, params)
        return StepResult(new, joint.obs[0], joint.reward[0], joint.terminated, joint.truncated,
                          {"action_mask": joint.mask[0], "opponent_action": theirs})


class TurnVsOpponent(Environment[Any, Any]):
    """Player 0 of a turn-based two-player game (``tcg-pocket``) against a fixed JAX opponent,
    as an envport ``Environment``: one step is one action of player 0, then every action of the
    opponent (``agents.heuristic_action`` or ``agents.random_action`` of the game, from the
    step's key) until player 0 must act again or the game is over; the reset plays the
    opponent's first actions the same way when it moves first. The observation is player 0's
    row, the reward player 0's summed over the step's actions, ``info["action_mask"]`` player
    0's mask; :meth:`transition_against` takes the opponent as a traced index, as for
    :class:`VsOpponent`. ``envport train tcg-pocket --opponent NAME`` trains on it
    (:func:`vs_opponent`)."""

    name = "tcg-pocket-vs-opponent"
    GAMES: tuple[str, ...] = ("tcg-pocket",)
    # More opponent actions in a row than a turn can hold (a hand of at most 10 cards, one
    # attach, one retreat, the decisions they open, the next setup): a bound for the loop.
    MAX_OPPONENT_ACTIONS = 64

    def __init__(self, name: str = "tcg-pocket", opponent: str = "heuristic") -> None:
        self.check(name, opponent)
        self.game: Any = two_player(name)
        self.opponent = opponent

    @classmethod
    def check(cls, name: str, opponent: str) -> None:
        if name not in cls.GAMES:
            raise ValueError(f"{name} is not a turn-based game: those are {', '.join(cls.GAMES)}")
        if opponent not in OPPONENTS:
            raise ValueError(f"{name} trains against a fixed opponent, one of "
                             f"{', '.join(OPPONENTS)} (no self-play pool), got {opponent!r}")

    def default_params(self) -> Any:
        return self.game.env.default_params()

    def observation_space(self, params: Any = None) -> Any:
        return self.game.env.observation_space(params)

    def action_space(self, params: Any = None) -> Any:
        from envport.core.spaces import Discrete

        return Discrete(self.game.n_actions)

    def sample_draws(self, key: Array, state: Any, params: Any = None) -> Array:
        return key

    def action_mask(self, state: Any, params: Any = None) -> Array:
        """Player 0's legal actions ``bool[A]`` at ``state`` (all False once it is over)."""
        from envport.envs.tcg_pocket.jax_engine import game

        return game.action_mask(state, jnp.int32(0))

    def reset(self, key: Array, params: Any = None) -> tuple[Any, Array]:
        k_game, k_opp = jax.random.split(key)
        state, _ = self.game.env.reset(k_game, params)
        state, reward, done = self._opponent_turn(
            k_opp, state, jnp.float32(0), jnp.asarray(False), OPPONENTS.index(self.opponent),
            params)
        return state, self._player_0(state, reward, done).obs

    def fixed_player_action(self, key: Array, state: Any, player: str) -> Array:
        """Player 0's action at ``state`` (one where it is to act) by the fixed player
        ``player`` (one of :data:`OPPONENTS`): what ``envport imitate`` clones."""
        return self.game.opponent_action(key, state, OPPONENTS.index(player))

    def transition(self, state: Any, action: Array, draws: Any, params: Any = None
                   ) -> StepResult:
        return self._transition(state, action, draws, OPPONENTS.index(self.opponent), params)

    def transition_against(self, state: Any, action: Array, draws: Any, opponent: Array,
                           params: Any = None) -> StepResult:
        """:meth:`transition` against ``OPPONENTS[opponent]``, a (traced) index."""
        return self._transition(state, action, draws, opponent, params)

    def _transition(self, state: Any, action: Array, draws: Any, opponent: int | Array,
                    params: Any) -> StepResult:
        k_game, k_opp = jax.random.split(draws)
        res = self.game.env.step(k_game, state, jnp.asarray(action, jnp.int32), params)
        state, reward, done = self._opponent_turn(
            k_opp, res.state, jnp.asarray(res.reward, jnp.float32), res.terminated, opponent,
            params)
        return self._player_0(state, reward, done)

    def _player_0(self, state: Any, reward: Array, done: Array) -> StepResult:
        # The two players' views once per step, not once per action of the opponent's turn.
        joint = self.game._joint(state, jnp.stack([reward, -reward]), done)
        return StepResult(state, joint.obs[0], reward, joint.terminated, joint.truncated,
                          {"action_mask": joint.mask[0]})

    def _opponent_turn(self, key: Array, state: Any, reward: Array, done: Array,
                       opponent: int | Array, params: Any) -> tuple[Any, Array, Array]:
        """The opponent's actions (the engine's own steps) while it is to act: the state,
        player 0's reward summed over them (from ``reward``), and whether the game is over."""

        def theirs(carry: tuple[Any, ...]) -> Any:
            state, _, done, _, n = carry
            return (self.game.to_act(state) == 1) & ~done & (n < self.MAX_OPPONENT_ACTIONS)

        def play(carry: tuple[Any, ...]) -> tuple[Any, ...]:
            state, reward, _, key, n = carry
            key, k_choice, k_game = jax.random.split(key, 3)
            choice = self.game.opponent_action(k_choice, state, opponent)
            res = self.game.env.step(k_game, state, choice, params)
            return (res.state, reward + jnp.asarray(res.reward, jnp.float32),
                    jnp.asarray(res.terminated), key, n + 1)

        state, reward, done, _, _ = jax.lax.while_loop(
            theirs, play, (state, reward, jnp.asarray(done), key, jnp.int32(0)))
        return state, reward, done


def _vs_opponent_class(name: str) -> type[VsOpponent] | type[TurnVsOpponent]:
    return TurnVsOpponent if name in TurnVsOpponent.GAMES else VsOpponent


def check_vs_opponent(name: str, opponent: str) -> None:
    """ValueError unless ``name`` is a two-player game that trains against ``opponent``
    (simultaneous games: a fixed opponent or the self-play pool; turn-based: a fixed one)."""
    games = (*VsOpponent.GAMES, *TurnVsOpponent.GAMES)
    if name not in games:
        raise ValueError(f"{name} has no fixed-opponent training: the games with one are "
                         f"{', '.join(games)}")
    _vs_opponent_class(name).check(name, opponent)


def vs_opponent(name: str, opponent: str) -> Environment[Any, Any]:
    """Player 0 of the two-player game ``name`` against the fixed JAX opponent ``opponent``:
    :class:`VsOpponent` for a simultaneous game, :class:`TurnVsOpponent` for a turn-based one."""
    check_vs_opponent(name, opponent)
    return _vs_opponent_class(name)(name, opponent)


# ---- self-play: player 0 against a pool of its own past policies -----------------------------

class PoolParams(NamedTuple):
    """:class:`VsPool`'s params: the game's, and the pool of past networks (traced, so the
    trainer replaces them between updates without compiling again)."""

    game: Any
    nets: Any  # the policy's parameters, each leaf with a leading axis of `size` members
    filled: Array  # int32: members written so far (at most `size`)
    updates: Array  # int32: calls of update_params so far (the PPO updates of the run)


class PoolState(NamedTuple):
    game: Any
    member: Array  # int32: the pool member playing player 1 in this game, drawn at reset


class VsPool(VsOpponent):
    """Self-play (``envport train pokemon-gen1 --opponent pool``): player 0 against the run's
    own past policies. Every ``every`` PPO updates (from the first) the trainer's current
    network is written into a ring of ``size`` members (:meth:`update_params`, which the JAX
    trainer calls before each rollout); each game draws one member from those written at its
    reset (a slot overwritten mid-game changes its player: the ring moves slowly, ``every``
    updates per slot). The member plays player 1 from player 1's own observation row, sampled
    among its legal choices as PPO samples (``Policy.apply`` with the mask). The opponent
    improves with the learner, and the ring keeps older strategies in play so the learner
    cannot specialise against the latest one alone.

    ``policy`` (``envport.train.ppo.Policy``, the run's network) is needed to step; without it
    (spaces, masks) the env still describes itself."""

    name = "pokemon-gen1-vs-pool"

    def __init__(self, name: str = "pokemon-gen1", policy: Any = None, size: int = 8,
                 every: int = 50) -> None:
        super().__init__(name, POOL)
        if size < 1 or every < 1:
            raise ValueError(f"a pool needs size >= 1 and every >= 1, got {size}, {every}")
        if policy is not None and policy.net.network != "mlp":
            # Its members play each step afresh (no carry kept per game).
            raise ValueError(f"self-play pools hold MLP policies, not {policy.net.network!r}")
        self.policy, self.size, self.every = policy, size, every

    def default_params(self) -> Any:
        game = self.game.env.default_params()
        if self.policy is None:
            return PoolParams(game, (), jnp.int32(0), jnp.int32(0))
        shapes = jax.eval_shape(self.policy.init, jax.random.key(0))
        nets = jax.tree_util.tree_map(lambda x: jnp.zeros((self.size, *x.shape), x.dtype),
                                      shapes)
        return PoolParams(game, nets, jnp.int32(0), jnp.int32(0))

    def update_params(self, params: PoolParams, net: Any) -> PoolParams:
        """``params`` after one PPO update whose network before it is ``net``: every
        ``every``-th call (the first included) writes ``net`` into the next ring slot."""
        push = params.updates % self.every == 0
        slot = (params.updates // self.every) % self.size
        nets = jax.tree_util.tree_map(
            lambda ring, x: jnp.where(push, ring.at[slot].set(x.astype(ring.dtype)), ring),
            params.nets, net)
        filled = jnp.where(push, jnp.minimum(params.filled + 1, self.size), params.filled)
        return PoolParams(params.game, nets, filled.astype(jnp.int32), params.updates + 1)

    def reset(self, key: Array, params: Any = None) -> tuple[Any, Array]:
        params = self.default_params() if params is None else params
        k_game, k_member = jax.random.split(key)
        state, obs = super().reset(k_game, params.game)
        member = jax.random.randint(k_member, (), 0, jnp.maximum(params.filled, 1))
        return PoolState(state, member.astype(jnp.int32)), obs

    def action_mask(self, state: Any, params: Any = None) -> Array:
        return super().action_mask(state.game)

    def opponent_choice(self, key: Array, state: PoolState, params: PoolParams) -> Array:
        """Player 1's choice: pool member ``state.member``'s masked sample from its own row."""
        if self.policy is None:
            raise ValueError("VsPool needs the run's policy to step (VsPool(name, policy))")
        from envport.envs.pokemon_gen1.env import masks_of

        obs = self.game.env.observe(state.game)[1]
        mask = masks_of(state.game.battle)[1]
        net = jax.tree_util.tree_map(lambda ring: ring[state.member], params.nets)
        _, choice = self.policy.act(net, self.policy.initial_carry(1), obs[None],
                                    jnp.ones(1, bool), mask[None], key)
        return choice[0]

    def transition(self, state: Any, action: Array, draws: Any, params: Any = None
                   ) -> StepResult:
        params = self.default_params() if params is None else params
        k_opp, k_env = jax.random.split(draws)
        theirs = self.opponent_choice(k_opp, state, params)
        res = self._play(k_env, state.game, action, theirs, params.game)
        return res._replace(state=PoolState(res.state, state.member))
