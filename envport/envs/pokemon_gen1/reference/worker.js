#!/usr/bin/env node
// envport's persistent Pokemon Showdown worker: many seeded battles in one Node process, driven
// through JSON lines on stdin/stdout (protocol in ../README.md, "The worker protocol").
//
// One input line is either one request object or a JSON array of request objects (a batch).
// A request is {"id": <any JSON>, "op": <name>, ...arguments}. Each request gets exactly one
// reply {"id", "ok": true, "result"} or {"id", "ok": false, "error": {"type", "message", ...}};
// a single request is answered by one line holding its reply, a batch by one line holding the
// array of replies in request order. Requests of a batch run in order; one failing does not stop
// the others. Nothing but replies is written to stdout (Showdown's own output goes nowhere).
'use strict';

const readline = require('readline');

// stdout carries replies only: anything Showdown prints goes to stderr.
for (const name of ['log', 'info', 'warn', 'debug']) {
	console[name] = (...args) => process.stderr.write(args.map(String).join(' ') + '\n');
}

let PS;
try {
	PS = require('pokemon-showdown');
} catch (err) {
	process.stderr.write(
		`pokemon-showdown is not installed next to ${__filename} (${err.message}). ` +
		`Run: bash envport/envs/pokemon_gen1/install_reference.sh\n`
	);
	process.exit(3);
}
const {Battle, Teams, PRNG, Dex} = PS;
const SHOWDOWN_VERSION = require('pokemon-showdown/package.json').version;

const DEFAULT_FORMAT = 'gen1randombattle';
const battles = new Map(); // battle_id -> {battle, tape, logPos, seed}

class RequestError extends Error {
	constructor(type, message, extra = {}) {
		super(message);
		this.type = type;
		this.extra = extra;
	}
}

function bad(message) {
	return new RequestError('BadRequest', message);
}

// Showdown accepts out-of-range seed words silently (and then computes garbage), so seeds are
// checked here: exactly four integers in 0..65535.
function checkSeed(seed, what = 'seed') {
	// Showdown's default ChaCha20 generator (prng.py's sodium functions step it in JAX).
	if (typeof seed === 'string' && /^sodium,[0-9a-f]{1,64}$/.test(seed)) return seed;
	if (typeof seed === 'string' && /^\d+(,\d+){3}$/.test(seed)) seed = seed.split(',').map(Number);
	if (!Array.isArray(seed) || seed.length !== 4 ||
		!seed.every(w => Number.isInteger(w) && w >= 0 && w <= 0xFFFF)) {
		throw bad(`${what} must be 4 integers in 0..65535, got ${JSON.stringify(seed)}`);
	}
	return seed.join(',');
}

// A PRNG's seed as envport reads it: four numbers (Gen 5), or the "sodium,HEX" string.
function seedReply(prng) {
	const seed = prng.getSeed();
	return seed.startsWith('sodium,') ? seed : seed.split(',').map(Number);
}

function getBattle(req) {
	const entry = battles.get(req.battle_id);
	if (!entry) throw bad(`no battle with battle_id ${JSON.stringify(req.battle_id)}`);
	return entry;
}

// ---- the tape: every PRNG draw, with the API that asked for it -------------------------------
// The battle's PRNG object (and its rng) is replaced by Battle.fromJSON, resetRNG and setSeed, so
// wrapping is done per object and checked again before every operation (ensureTape).

function wrapRng(entry, prng) {
	const rng = prng.rng;
	if (rng.__envportTaped) return;
	const next = rng.next.bind(rng);
	// Every step of the generator makes a tape entry; PRNG.random fills in its arguments and
	// result. An entry left with api "next" is a step that bypassed PRNG.random.
	rng.next = () => {
		const raw = next();
		entry.tape.push({i: entry.tape.length, turn: entry.battle.turn, api: 'next', from: null,
			to: null, raw, result: null});
		return raw;
	};
	rng.__envportTaped = true;
}

function attachTape(entry) {
	const prng = entry.battle.prng;
	if (prng.__envportTaped) {
		wrapRng(entry, prng);
		return;
	}
	let api = null;
	const random = prng.random.bind(prng);
	prng.random = (from, to) => {
		const before = entry.tape.length;
		const result = random(from, to);
		if (entry.tape.length !== before + 1) {
			throw new Error(`PRNG.random made ${entry.tape.length - before} generator steps, expected 1`);
		}
		const draw = entry.tape[before];
		draw.api = api || 'random';
		draw.from = from === undefined ? null : from;
		draw.to = to === undefined ? null : to;
		draw.result = result;
		return result;
	};
	for (const name of ['randomChance', 'sample', 'shuffle']) {
		const f = prng[name].bind(prng);
		prng[name] = (...args) => {
			const outer = api;
			api = name;
			try {
				return f(...args);
			} finally {
				api = outer;
			}
		};
	}
	const setSeed = prng.setSeed.bind(prng);
	prng.setSeed = seed => {
		setSeed(seed);
		wrapRng(entry, prng);
	};
	wrapRng(entry, prng);
	prng.__envportTaped = true;
}

function ensureTape(entry) {
	const battle = entry.battle;
	if (!Object.prototype.hasOwnProperty.call(battle, 'resetRNG')) {
		const reset = battle.resetRNG.bind(battle);
		battle.resetRNG = (...args) => {
			reset(...args);
			attachTape(entry);
		};
	}
	attachTape(entry);
}

// ---- what a turn returns ---------------------------------------------------------------------

function winnerOf(battle) {
	if (!battle.ended) return null;
	// Players are named after their side ids, so battle.winner is 'p1' or 'p2'; '' is a tie.
	return battle.winner ? battle.winner : 'tie';
}

function turnResult(entry) {
	const battle = entry.battle;
	// |t:| lines carry the wall clock: the only non-deterministic output.
	const log = battle.log.slice(entry.logPos).filter(line => !line.startsWith('|t:|'));
	entry.logPos = battle.log.length;
	const tape = entry.tape;
	entry.tape = [];
	return {
		log,
		requests: {p1: battle.p1.activeRequest || null, p2: battle.p2.activeRequest || null},
		turn: battle.turn,
		ended: battle.ended,
		winner: winnerOf(battle),
		prng: seedReply(battle.prng),
		tape,
	};
}

// ---- operations ------------------------------------------------------------------------------

function checkTeam(team, what) {
	if (typeof team !== 'string' || !team) throw bad(`${what} must be a packed team string`);
	let sets;
	try {
		sets = Teams.unpack(team);
	} catch (err) {
		throw bad(`${what} is not a packed team: ${err.message}`);
	}
	if (!sets || sets.length < 1 || sets.length > 6) {
		throw bad(`${what} must unpack to 1-6 Pokemon, got ${sets ? sets.length : 'nothing'}`);
	}
	return team;
}

function opGenerateTeam(req) {
	const format = req.format || DEFAULT_FORMAT;
	const seed = checkSeed(req.seed, 'generate_team seed');
	const team = Teams.generate(format, {seed});
	return {packed: Teams.pack(team), team};
}

// Teams.pack of a team given as an array of sets ({species, moves, level, evs, ivs, ...}).
function opPackTeam(req) {
	if (!Array.isArray(req.team) || req.team.length < 1 || req.team.length > 6) {
		throw bad('pack_team needs team: a list of 1-6 sets');
	}
	return {packed: Teams.pack(req.team)};
}

function opCreate(req) {
	if (req.battle_id === undefined || req.battle_id === null) throw bad('create needs a battle_id');
	if (battles.has(req.battle_id)) throw bad(`battle_id ${JSON.stringify(req.battle_id)} exists`);
	const seed = checkSeed(req.seed, 'battle seed');
	const team1 = checkTeam(req.team1, 'team1');
	const team2 = checkTeam(req.team2, 'team2');
	const formatid = req.format || DEFAULT_FORMAT;
	const battle = new Battle({formatid, seed});
	const entry = {battle, tape: [], logPos: 0, seed};
	// Before the players join: the lead switch-ins can already draw (speed-tie shuffles).
	ensureTape(entry);
	battles.set(req.battle_id, entry);
	try {
		battle.setPlayer('p1', {name: 'p1', team: team1});
		battle.setPlayer('p2', {name: 'p2', team: team2});
	} catch (err) {
		battles.delete(req.battle_id);
		throw bad(`Showdown rejected the battle: ${err.message}`);
	}
	return turnResult(entry);
}

function choiceError(side, input, message) {
	return new RequestError('IllegalChoice',
		`${side} choice ${JSON.stringify(input)} rejected by Showdown: ${message}`,
		{side, choice: input, showdown_message: message});
}

function opChoose(req) {
	const entry = getBattle(req);
	ensureTape(entry);
	const battle = entry.battle;
	if (battle.ended) throw bad(`battle ${JSON.stringify(req.battle_id)} has ended`);
	const inputs = {p1: req.p1, p2: req.p2};
	// Both choices are checked before either is committed (Side.choose validates without running
	// the turn), so a rejected choice leaves the battle exactly as it was.
	const sides = [battle.p1, battle.p2];
	try {
		for (const side of sides) {
			const input = inputs[side.id];
			const waiting = !side.activeRequest || side.activeRequest.wait;
			if (input === undefined || input === null || input === '') {
				if (!waiting) {
					throw choiceError(side.id, input ?? null, `${side.id} must choose (its request is not a wait)`);
				}
				continue;
			}
			if (typeof input !== 'string') throw bad(`${side.id} choice must be a string`);
			if (waiting) {
				throw choiceError(side.id, input, `${side.id} has nothing to choose this turn (wait request)`);
			}
			if (!side.choose(input) || !side.isChoiceDone()) {
				throw choiceError(side.id, input, side.choice.error || 'incomplete choice');
			}
		}
		if (!battle.allChoicesDone()) throw bad('the choices did not complete the turn');
	} catch (err) {
		// A half-made pair would otherwise stay in side.choice (and in toJSON).
		for (const s of sides) s.clearChoice();
		throw err;
	}
	battle.commitChoices();
	return turnResult(entry);
}

// battle.resetRNG(seed): the battle continues from a new PRNG state (a new PRNG object, taped).
function opReseed(req) {
	const entry = getBattle(req);
	const seed = checkSeed(req.seed, 'reseed seed');
	ensureTape(entry);
	entry.battle.resetRNG(seed);
	return {prng: seedReply(entry.battle.prng), turn: entry.battle.turn};
}

function opExport(req) {
	return getBattle(req).battle.toJSON();
}

function opImport(req) {
	if (req.battle_id === undefined || req.battle_id === null) throw bad('import needs a battle_id');
	if (typeof req.json !== 'object' || req.json === null) throw bad('import needs json (a toJSON object)');
	let battle;
	try {
		battle = Battle.fromJSON(req.json);
	} catch (err) {
		throw bad(`Battle.fromJSON failed: ${err.message}`);
	}
	battle.restart(() => {});
	const previous = battles.get(req.battle_id);
	const entry = {battle, tape: [], logPos: battle.log.length, seed: battle.prngSeed};
	ensureTape(entry);
	battles.set(req.battle_id, entry);
	void previous; // an import replaces any battle of that id
	return turnResult(entry);
}

function opDestroy(req) {
	return {destroyed: battles.delete(req.battle_id)};
}

function opList() {
	return {battle_ids: [...battles.keys()]};
}

// A compact state: the fields envport compares turn by turn.
function plain(value, battle, depth = 0) {
	// Effect-state fields are numbers/strings/booleans, or references to Pokemon, sides and
	// effects (written as "p1:<team index>", "p1", the effect id).
	if (value === null || value === undefined) return null;
	if (typeof value === 'function') return '[function]';
	if (typeof value !== 'object') return value;
	if (value === battle) return '[battle]';
	if (value.battle === battle) {
		if (value.side && value.set) return `${value.side.id}:${value.side.team.indexOf(value.set)}`;
		if (Array.isArray(value.pokemon) && typeof value.id === 'string') return value.id;
		return '[battle object]';
	}
	if (typeof value.id === 'string' && value.effectType) return value.id;
	if (depth > 4) return '[deep object]';
	if (Array.isArray(value)) return value.map(v => plain(v, battle, depth + 1));
	const out = {};
	for (const [k, v] of Object.entries(value)) out[k] = plain(v, battle, depth + 1);
	return out;
}

function effectState(state, battle) {
	const out = {};
	for (const [k, v] of Object.entries(state)) {
		// effectOrder is a global insertion counter (event bookkeeping, not battle state).
		if (k === 'effectOrder' || k === 'target') continue;
		out[k] = plain(v, battle);
	}
	return out;
}

function pokemonState(p, battle) {
	const volatiles = {};
	for (const [id, state] of Object.entries(p.volatiles)) volatiles[id] = effectState(state, battle);
	return {
		species: p.species.id,
		level: p.level,
		team_index: p.side.team.indexOf(p.set),
		position: p.position,
		active: p.isActive,
		fainted: p.fainted,
		hp: p.hp,
		maxhp: p.maxhp,
		status: p.status || '',
		status_state: effectState(p.statusState, battle),
		boosts: {...p.boosts},
		stored_stats: {...p.storedStats},
		modified_stats: p.modifiedStats ? {...p.modifiedStats} : null,
		volatiles,
		moves: p.moveSlots.map(m => ({id: m.id, pp: m.pp, maxpp: m.maxpp, disabled: m.disabled})),
		types: p.getTypes(),
		transformed: p.transformed,
		last_move: p.lastMove ? p.lastMove.id : null,
	};
}

function opState(req) {
	const entry = getBattle(req);
	const battle = entry.battle;
	const sides = battle.sides.map(side => {
		const pokemon = side.team.map(set => side.pokemon.find(p => p.set === set));
		const sideConditions = {};
		for (const [id, state] of Object.entries(side.sideConditions)) {
			sideConditions[id] = effectState(state, battle);
		}
		return {
			id: side.id,
			pokemon_left: side.pokemonLeft,
			active: side.active[0] ? side.team.indexOf(side.active[0].set) : -1,
			side_conditions: sideConditions,
			pokemon: pokemon.map(p => pokemonState(p, battle)),
		};
	});
	return {
		turn: battle.turn,
		ended: battle.ended,
		winner: winnerOf(battle),
		request_state: battle.requestState,
		prng: seedReply(battle.prng),
		prng_seed: battle.prngSeed,
		last_damage: battle.lastDamage,
		pseudo_weather: Object.keys(battle.field.pseudoWeather),
		sides,
	};
}

// Showdown's own PRNG class on a seed, one result per call, with the raw generator output:
// the evidence that envport's JAX PRNG equals Showdown's.
function opPrng(req) {
	const seed = checkSeed(req.seed, 'prng seed');
	if (!Array.isArray(req.calls)) throw bad('prng needs calls: a list of [api, ...args]');
	const entry = {battle: {turn: 0}, tape: []};
	entry.battle.prng = new PRNG(seed);
	attachTape(entry);
	const prng = entry.battle.prng;
	const results = [];
	for (const call of req.calls) {
		if (!Array.isArray(call) || !['random', 'randomChance', 'sample', 'shuffle'].includes(call[0])) {
			throw bad(`bad prng call ${JSON.stringify(call)}`);
		}
		const [api, ...args] = call;
		const start = entry.tape.length;
		let value;
		if (api === 'shuffle') {
			const items = args[0].slice();
			prng.shuffle(items, ...args.slice(1));
			value = items;
		} else {
			value = prng[api](...args);
		}
		results.push({value, raw: entry.tape.slice(start).map(d => d.raw)});
	}
	return {results, state: seedReply(prng)};
}

// Showdown's in-process speed, the baseline envport's numbers are compared with: random legal
// players (a usable move, or a random switch when forced; no voluntary switches) choosing with
// their own Gen 5 PRNG, each battle with two Teams.generate teams (or teams made beforehand).
function randomChoice(request, rng) {
	if (!request || request.wait) return null;
	const bench = [];
	request.side.pokemon.forEach((p, i) => {
		if (!p.active && !p.condition.endsWith(' fnt')) bench.push(`switch ${i + 1}`);
	});
	if (request.forceSwitch) return rng.sample(bench);
	const moves = [];
	request.active[0].moves.forEach((m, i) => {
		if (!m.disabled && m.pp !== 0) moves.push(`move ${i + 1}`);
	});
	return rng.sample(moves);
}

function opSelfplay(req) {
	const rng = new PRNG(checkSeed(req.seed || [1, 2, 3, 4]));
	const seedOf = () => [0, 0, 0, 0].map(() => rng.random(65536)).join(',');
	const pool = [];
	if (req.pregenerate) {
		for (let i = 0; i < 200; i++) pool.push(Teams.pack(Teams.generate(DEFAULT_FORMAT, {seed: seedOf()})));
	}
	const team = () => req.pregenerate ? rng.sample(pool) : Teams.pack(Teams.generate(DEFAULT_FORMAT, {seed: seedOf()}));
	const playOne = () => {
		const battle = new Battle({formatid: DEFAULT_FORMAT, seed: seedOf()});
		const entry = {battle, tape: [], logPos: 0};
		if (req.tape) ensureTape(entry);
		battle.setPlayer('p1', {name: 'p1', team: team()});
		battle.setPlayer('p2', {name: 'p2', team: team()});
		while (!battle.ended) {
			for (const side of battle.sides) {
				const choice = randomChoice(side.activeRequest, rng);
				if (choice) battle.choose(side.id, choice);
			}
			entry.tape = [];
		}
		return battle.turn;
	};
	for (let i = 0; i < (req.warmup_battles ?? 50); i++) playOne();
	let battlesDone = 0, turns = 0;
	const start = process.hrtime.bigint();
	const limit = Number(req.seconds || 10) * 1e9;
	let elapsed = 0;
	while (elapsed < limit) {
		turns += playOne();
		battlesDone++;
		elapsed = Number(process.hrtime.bigint() - start);
	}
	const seconds = elapsed / 1e9;
	return {battles: battlesDone, turns, seconds, battles_per_s: battlesDone / seconds,
		turns_per_s: turns / seconds, pregenerate: !!req.pregenerate, tape: !!req.tape};
}

// Test hooks: a worker that stops answering (hang) or dies (exit), so that the Python side's
// timeout and restart paths can be exercised against the real process.
function opDebugSleep(req) {
	const until = Date.now() + Number(req.ms || 0);
	while (Date.now() < until) { /* a busy wait: the event loop must not answer */ }
	return {slept: req.ms};
}

const OPS = {
	ping: () => ({showdown_version: SHOWDOWN_VERSION, node_version: process.version, pid: process.pid,
		battles: battles.size}),
	generate_team: opGenerateTeam,
	pack_team: opPackTeam,
	create: opCreate,
	choose: opChoose,
	reseed: opReseed,
	export: opExport,
	import: opImport,
	state: opState,
	destroy: opDestroy,
	list: opList,
	prng: opPrng,
	selfplay: opSelfplay,
	debug_sleep: opDebugSleep,
	debug_exit: req => process.exit(Number(req.code || 1)),
};
// Test-only ops for the L1 component checks (reference/probe.js): Showdown's functions on prepared
// battles, with detailed draw records.
Object.assign(OPS, require('./probe.js')({Battle, PRNG, Dex, bad}));

function handle(req) {
	const id = req && typeof req === 'object' && 'id' in req ? req.id : null;
	try {
		if (!req || typeof req !== 'object' || Array.isArray(req)) throw bad('a request must be an object');
		const op = OPS[req.op];
		if (!op) throw bad(`unknown op ${JSON.stringify(req.op)}; ops: ${Object.keys(OPS).join(', ')}`);
		if (req.debug_delay_ms) opDebugSleep({ms: req.debug_delay_ms}); // test hook: a hung request
		return {id, ok: true, result: op(req)};
	} catch (err) {
		if (err instanceof RequestError) {
			return {id, ok: false, error: {type: err.type, message: err.message, ...err.extra}};
		}
		// An exception inside Showdown: the battle it came from may be half-way through a turn.
		const broken = req && battles.has(req.battle_id) && ['choose', 'state', 'export'].includes(req.op);
		if (broken && req.op === 'choose') battles.delete(req.battle_id);
		return {id, ok: false, error: {type: 'ShowdownError', message: String(err && err.message),
			stack: String(err && err.stack), battle_dropped: broken && req.op === 'choose'}};
	}
}

const rl = readline.createInterface({input: process.stdin, terminal: false});
rl.on('line', line => {
	if (!line.trim()) return;
	let parsed;
	try {
		parsed = JSON.parse(line);
	} catch (err) {
		process.stdout.write(JSON.stringify({id: null, ok: false,
			error: {type: 'BadRequest', message: `not JSON: ${err.message}`}}) + '\n');
		return;
	}
	const reply = Array.isArray(parsed) ? parsed.map(handle) : handle(parsed);
	process.stdout.write(JSON.stringify(reply) + '\n');
});
rl.on('close', () => process.exit(0));
