// Test-only probes for envport's L1 component checks: Showdown's own Gen 1 functions run on a
// prepared battle, with every PRNG draw recorded (its API, arguments, raw value, result, the
// Showdown function that asked for it, and the generator state after it). Written against
// Showdown's public objects (Battle, Pokemon, BattleActions); nothing of Showdown is copied here.
//
// worker.js registers these as ops (probe_stats, probe_boosts, probe_types, probe_damage,
// probe_hit). Each takes a batch of cases and answers one result per case, so that thousands of
// cases cost a few requests.
'use strict';

module.exports = function makeProbeOps({Battle, PRNG, Dex, bad}) {
	const FORMAT = 'gen1randombattle';
	const dex = Dex.forGen(1);

	// ---- battles ---------------------------------------------------------------------------

	// A Gen 1 set as envport writes them: {species, level, moves, ivs, evs} (stat objects).
	function gen1Set(s) {
		return {name: s.species, species: s.species, ability: 'No Ability', item: '', nature: '',
			moves: s.moves, level: s.level, ivs: s.ivs, evs: s.evs};
	}

	function newBattle(team1, team2) {
		const battle = new Battle({formatid: FORMAT, seed: [0, 0, 0, 0]});
		battle.setPlayer('p1', {name: 'p1', team: team1.map(gen1Set)});
		battle.setPlayer('p2', {name: 'p2', team: team2.map(gen1Set)});
		return battle;
	}

	// ---- the detailed tape -----------------------------------------------------------------

	// The Showdown function that made a draw: the first stack frame outside the PRNG, this file
	// and Battle's thin random/randomChance/sample wrappers.
	const SKIP_FRAME = /probe\.js|[\\/]prng\.js|Battle\.(random|randomChance|sample|shuffle) /;
	function callSite() {
		const limit = Error.stackTraceLimit;
		Error.stackTraceLimit = 40;
		const stack = new Error().stack.split('\n').slice(1);
		Error.stackTraceLimit = limit;
		const frames = [];
		for (const line of stack) {
			if (SKIP_FRAME.test(line)) continue;
			const m = /at (?:new )?([^ ]+) \((.*[\\/])?([^\\/:]+):\d+:\d+\)/.exec(line);
			if (m) frames.push(`${m[1]}@${m[3]}`);
			if (frames.length >= 3) break;
		}
		return frames;
	}

	// Replaces battle.prng's methods with recording ones (on this object only).
	function attachTape(battle) {
		const prng = battle.prng;
		const rng = prng.rng;
		const tape = [];
		let raw = null;
		let outer = null;
		const next = rng.next.bind(rng);
		rng.next = () => (raw = next());
		const random = prng.random.bind(prng);
		prng.random = (from, to) => {
			raw = null;
			const result = random(from, to);
			tape.push({
				api: outer ? outer.api : 'random', args: outer ? outer.args : [from, to].filter(x => x !== undefined),
				from: from === undefined ? null : from, to: to === undefined ? null : to,
				raw, result, site: callSite(), state: prng.getSeed().split(',').map(Number),
			});
			return result;
		};
		for (const api of ['randomChance', 'sample', 'shuffle']) {
			const f = prng[api].bind(prng);
			prng[api] = (...args) => {
				const saved = outer;
				// sample/shuffle record the list length, randomChance its two numbers
				outer = {api, args: api === 'randomChance' ? args : [args[0].length, ...args.slice(1)]};
				try {
					return f(...args);
				} finally {
					outer = saved;
				}
			};
		}
		return tape;
	}

	function seedOf(req) {
		const s = req.seed;
		if (!Array.isArray(s) || s.length !== 4 || !s.every(w => Number.isInteger(w) && w >= 0 && w <= 0xFFFF)) {
			throw bad(`probe seed must be 4 integers in 0..65535, got ${JSON.stringify(s)}`);
		}
		return s.join(',');
	}

	// ---- preparing a Pokemon with Showdown's own functions ----------------------------------

	function applyOps(battle, p, ops) {
		const results = [];
		const foe = p.side.foe.active[0];
		for (const op of ops || []) {
			const [kind, a, b] = op;
			if (kind === 'boost') {
				results.push(p.boostBy({[a]: b}));
			} else if (kind === 'penalty') {
				p.modifyStat(a, b);
				results.push(null);
			} else if (kind === 'status') {
				// as moveHit does for a move's primary status: setStatus, then the Gen 1 penalty
				const ok = p.setStatus(a, b === 'self' ? p : foe);
				if (ok && a === 'brn') p.modifyStat('atk', 0.5);
				if (ok && a === 'par') p.modifyStat('spe', 0.25);
				results.push(!!ok);
			} else if (kind === 'volatile') {
				const ok = p.addVolatile(a, foe);
				if (ok && b) Object.assign(p.volatiles[a], b);
				results.push(!!ok);
			} else if (kind === 'hp') {
				p.hp = a;
				results.push(null);
			} else if (kind === 'types') {
				p.setType(a);
				results.push(null);
			} else if (kind === 'transform') {
				results.push(!!p.transformInto(foe));
			} else if (kind === 'clearboosts') {
				p.clearBoosts();
				results.push(null);
			} else if (kind === 'clearvolatile') {
				p.clearVolatile();
				results.push(null);
			} else {
				throw bad(`unknown probe op ${JSON.stringify(op)}`);
			}
		}
		return results;
	}

	function summary(p) {
		const volatiles = {};
		for (const [id, state] of Object.entries(p.volatiles)) {
			const fields = {};
			for (const [k, v] of Object.entries(state)) {
				if (typeof v === 'number' || typeof v === 'boolean' || typeof v === 'string') fields[k] = v;
			}
			volatiles[id] = fields;
		}
		return {
			species: p.species.id, set_species: dex.species.get(p.set.species).id, level: p.level,
			types: p.getTypes(), hp: p.hp, maxhp: p.maxhp, status: p.status || '',
			boosts: {...p.boosts}, stored: {...p.storedStats}, modified: {...p.modifiedStats},
			base_stored: {...p.baseStoredStats}, volatiles,
		};
	}

	// A battle with the case's two Pokemon active, prepared by the case's ops: attacker on side
	// `attacker` ('p1' default), the defender on the other side.
	function prepare(c) {
		const battle = newBattle([c.attacker], [c.defender]);
		const a = battle.p1.active[0];
		const d = battle.p2.active[0];
		const setupResults = {attacker: applyOps(battle, a, c.attacker_ops),
			defender: applyOps(battle, d, c.defender_ops)};
		if (c.last_damage !== undefined) battle.lastDamage = c.last_damage;
		if (c.defender_side) {
			// what the defender's side remembers of the attacker (Counter reads these)
			if (c.defender_side.last_enemy_selected_move !== undefined) {
				d.side.lastEnemySelectedMove = c.defender_side.last_enemy_selected_move;
			}
			if (c.defender_side.last_enemy_move !== undefined) {
				d.side.lastEnemyMove = c.defender_side.last_enemy_move ?
					battle.dex.getActiveMove(c.defender_side.last_enemy_move) : null;
			}
		}
		return {battle, a, d, setupResults};
	}

	function jsonValue(v) {
		if (v === false) return 'false';
		if (v === undefined) return 'undefined';
		if (v === null) return 'null';
		return v;
	}

	// ---- ops ---------------------------------------------------------------------------------

	function each(req, f) {
		if (!Array.isArray(req.cases)) throw bad(`${req.op} needs cases: a list`);
		return req.cases.map(c => {
			try {
				return {ok: true, ...f(c)};
			} catch (err) {
				if (err && err.type === 'BadRequest') throw err;
				return {ok: false, error: String(err && err.stack)};
			}
		});
	}

	// Stored stats and max HP of sets (sim/pokemon.ts constructor -> setSpecies -> spreadModify).
	function probeStats(req) {
		return each(req, c => {
			const battle = newBattle(c.sets, [c.sets[0]]);
			return {pokemon: battle.p1.pokemon.map(p => ({
				maxhp: p.maxhp, base_stored: {...p.baseStoredStats}, stored: {...p.storedStats},
				ivs: {...p.set.ivs}, evs: {...p.set.evs}}))};
		});
	}

	// A sequence of boostBy / modifyStat / clearBoosts / clearVolatile / setStatus calls on one
	// Pokemon, with the state after each.
	function probeBoosts(req) {
		return each(req, c => {
			const battle = newBattle([c.pokemon], [c.pokemon]);
			const p = battle.p1.active[0];
			const start = summary(p);
			const steps = (c.ops || []).map(op => {
				const [result] = applyOps(battle, p, [op]);
				return {result: jsonValue(result), boosts: {...p.boosts}, modified: {...p.modifiedStats},
					stored: {...p.storedStats}, status: p.status || ''};
			});
			return {start, steps};
		});
	}

	// Dex.getEffectiveness / getImmunity for every attacking type against each defending type list.
	function probeTypes(req) {
		return each(req, c => {
			const types = dex.types.names();
			return {types, rows: c.defenders.map(defTypes => types.map(t => ({
				effectiveness: defTypes.map(d => dex.getEffectiveness(t, d)),
				total: dex.getEffectiveness(t, defTypes),
				immune: !dex.getImmunity(t, defTypes)})))};
		});
	}

	// actions.getDamage(attacker, defender, move) on a prepared battle.
	function probeDamage(req) {
		return each(req, c => {
			const {battle, a, d, setupResults} = prepare(c);
			const before = {attacker: summary(a), defender: summary(d)};
			battle.resetRNG(seedOf(c));
			const tape = attachTape(battle);
			const move = battle.dex.getActiveMove(c.move);
			// a later hit of a multi-hit move: tryMoveHit has set move.damage to the first hit's
			if (c.preset_damage !== undefined && c.preset_damage !== null) move.damage = c.preset_damage;
			const result = battle.actions.getDamage(a, d, move);
			const crit = !!(move.moveHitData && Object.values(move.moveHitData).some(h => h.crit));
			return {result: jsonValue(result), crit, tape, prng: battle.prng.getSeed().split(',').map(Number),
				before, setup: setupResults};
		});
	}

	// actions.useMoveInner(move, attacker, {target: defender}) on a prepared battle: the whole hit
	// (accuracy, multi-hit count, damage, secondaries and whatever follows), outside a turn.
	function probeHit(req) {
		return each(req, c => {
			const {battle, a, d, setupResults} = prepare(c);
			const before = {attacker: summary(a), defender: summary(d)};
			battle.resetRNG(seedOf(c));
			const tape = attachTape(battle);
			const logStart = battle.log.length;
			const result = battle.actions.useMoveInner(c.move, a, {target: d});
			return {result: jsonValue(result), tape, prng: battle.prng.getSeed().split(',').map(Number),
				log: battle.log.slice(logStart), before,
				after: {attacker: summary(a), defender: summary(d)}, setup: setupResults};
		});
	}

	return {
		probe_stats: probeStats,
		probe_boosts: probeBoosts,
		probe_types: probeTypes,
		probe_damage: probeDamage,
		probe_hit: probeHit,
	};
};
