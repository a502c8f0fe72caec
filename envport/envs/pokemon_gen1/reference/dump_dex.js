#!/usr/bin/env node
// Prints, as one JSON object on stdout, the Gen 1 data of the installed pokemon-showdown:
// Dex.forGen(1) species, moves and type chart, and the gen1randombattle sets. Run by
// ../generate_data.py, which writes the committed tables in ../data/.
'use strict';

const fs = require('fs');
const path = require('path');
const {Dex} = require('pokemon-showdown');

const root = path.dirname(require.resolve('pokemon-showdown/package.json'));
const version = require('pokemon-showdown/package.json').version;
const dex = Dex.forGen(1);

// Presentation and later-generation fields, not Gen 1 mechanics.
const MOVE_NOISE = new Set([
	'desc', 'shortDesc', 'fullname', 'effectType', 'exists', 'isNonstandard', 'noCopy',
	'affectsFainted', 'sourceEffect', 'contestType', 'zMove', 'maxMove', 'hasSheerForceBoost',
	'isZ', 'isMax', 'spreadHit', 'forceSTAB', 'ignoreAbility', 'nonGhostTarget', 'baseMoveType',
	'gen',
]);
// Kept even when false: the rest is written only when set.
const MOVE_ALWAYS = new Set(['accuracy', 'basePower', 'category', 'flags', 'id', 'ignoreImmunity',
	'name', 'num', 'pp', 'priority', 'target', 'type', 'critRatio']);

// Data as Showdown holds it; functions (custom behaviour in code) are listed by name under
// "callbacks", so a table user sees which entries the engine must port by hand.
function plainData(obj, skip = new Set(), always = null) {
	const out = {};
	const callbacks = [];
	for (const key of Object.keys(obj).sort()) {
		if (skip.has(key)) continue;
		const value = obj[key];
		if (value === undefined) continue;
		if (typeof value === 'function') {
			callbacks.push(key);
			continue;
		}
		if (always && !always.has(key) && (value === false || value === '' || value === null)) continue;
		if (value && typeof value === 'object' && !Array.isArray(value)) {
			out[key] = plainData(value);
		} else if (Array.isArray(value)) {
			out[key] = value.map(v => (v && typeof v === 'object' ? plainData(v) : v));
		} else {
			out[key] = value;
		}
	}
	if (callbacks.length) out.callbacks = callbacks;
	return out;
}

const species = dex.species.all()
	.filter(s => s.exists && !s.isNonstandard && s.num >= 1 && s.num <= 151)
	.sort((a, b) => a.num - b.num)
	.map(s => ({id: s.id, name: s.name, num: s.num, types: s.types, base_stats: s.baseStats}));

const moves = dex.moves.all()
	.filter(m => m.exists && !m.isNonstandard && m.gen <= 1)
	.sort((a, b) => a.num - b.num)
	.map(m => plainData(m, MOVE_NOISE, MOVE_ALWAYS));

const types = dex.types.names();
const typechart = {
	types,
	// effectiveness[a][d]: Dex.getEffectiveness(attacking type a, defending type d), the
	// exponent of 2 (-1, 0, 1); immune[a][d]: !Dex.getImmunity(a, d).
	effectiveness: types.map(a => types.map(d => dex.getEffectiveness(a, d))),
	immune: types.map(a => types.map(d => !dex.getImmunity(a, d))),
};

const setsFile = path.join(root, 'dist', 'data', 'random-battles', 'gen1', 'data.json');
const sets = JSON.parse(fs.readFileSync(setsFile, 'utf8'));

process.stdout.write(JSON.stringify({
	showdown_version: version,
	species,
	moves,
	typechart,
	random_battle_sets: sets,
	license: fs.readFileSync(path.join(root, 'LICENSE'), 'utf8'),
	sources: {
		species: 'Dex.forGen(1).species.all(), num 1-151',
		moves: 'Dex.forGen(1).moves.all(), gen <= 1, standard',
		typechart: 'Dex.forGen(1).getEffectiveness / getImmunity',
		random_battle_sets: 'dist/data/random-battles/gen1/data.json',
	},
}) + '\n');
