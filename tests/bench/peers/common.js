// SPDX-License-Identifier: MIT
// common.js: what both peer servers share. The API is idem's for the
// requests tests/bench/run.py sends: POST /payments with a bearer key and an
// Idempotency-Key, a JSON body {"amount": 100.00, "currency": "BRL"}, answered
// 201 with the payment and its Location; GET /healthz.
//
// Settings, from the environment (run.py sets them all):
//   PEER_PORT                 the TCP port on 127.0.0.1 to listen on
//   PEER_REDIS_SOCKET         the unix socket of this peer's redis-server
//   PEER_KEYS_FILE            lines "ACCOUNT SHA256-HEX-OF-SECRET" (idem's keys file)
//   PEER_PROVIDER_LATENCY_MS  how long the fake provider takes per charge (0)
//   PEER_WORKERS              Node processes (node:cluster above 1; default 1)
'use strict';

const cluster = require('node:cluster');
const crypto = require('node:crypto');
const fs = require('node:fs');
const express = require('express');

function settings() {
	const env = process.env;
	const need = (name) => {
		if (!env[name]) {
			throw new Error(`${name} is not set`);
		}
		return env[name];
	};
	return {
		port: Number(need('PEER_PORT')),
		redisSocket: need('PEER_REDIS_SOCKET'),
		keysFile: need('PEER_KEYS_FILE'),
		latencyMs: Number(env.PEER_PROVIDER_LATENCY_MS || '0'),
		workers: Math.max(1, Number(env.PEER_WORKERS || '1')),
	};
}

// The keys file: the SHA-256 of each account's secret, as idem reads it.
function loadAccounts(path) {
	const byDigest = new Map();
	for (const line of fs.readFileSync(path, 'utf8').split('\n')) {
		const f = line.trim().split(/\s+/);
		if (f.length === 2 && !f[0].startsWith('#')) {
			byDigest.set(f[1].toLowerCase(), f[0]);
		}
	}
	return byDigest;
}

// Errors as RFC 9457 problem documents, as idem answers them.
function problem(res, status, type, title) {
	res.status(status).type('application/problem+json')
		.send(JSON.stringify({type: `/problems/${type}`, title, status}));
}

function authenticate(accounts) {
	return (req, res, next) => {
		const m = /^Bearer (\S+)$/.exec(req.get('Authorization') || '');
		const digest = m && crypto.createHash('sha256').update(m[1]).digest('hex');
		const account = digest && accounts.get(digest);
		if (!account) {
			problem(res, 401, 'unauthorized', 'A valid bearer key is required');
			return;
		}
		req.account = account;
		next();
	};
}

// POST /payments without an Idempotency-Key is refused: nothing is charged.
function requireKey(req, res, next) {
	if (!req.get('Idempotency-Key')) {
		problem(res, 400, 'idempotency-key-missing', 'An Idempotency-Key header is required');
		return;
	}
	next();
}

// The order in a body, or null: a positive amount with at most two decimals
// and a three-letter currency code.
function parseOrder(body) {
	if (!body || typeof body !== 'object') {
		return null;
	}
	const {amount, currency} = body;
	if (typeof amount !== 'number' || !Number.isFinite(amount) || amount <= 0
		|| Math.abs(amount * 100 - Math.round(amount * 100)) > 1e-6
		|| typeof currency !== 'string' || !/^[A-Z]{3}$/.test(currency)) {
		return null;
	}
	return {amount, currency};
}

// The fake provider: an in-memory counter, after the configured latency.
let charges = 0;
function charge(latencyMs) {
	const done = () => {
		charges += 1;
		return `ch_${process.pid.toString(36)}_${charges}`;
	};
	if (latencyMs <= 0) {
		return Promise.resolve(done());
	}
	return new Promise((resolve) => {
		setTimeout(() => resolve(done()), latencyMs);
	});
}

// Charges the order and renders the payment: {location, body}, body the
// JSON text idem would send (amount with two decimals).
async function pay(order, latencyMs) {
	const chargeId = await charge(latencyMs);
	const id = 'pay_' + crypto.randomBytes(12).toString('hex');
	const body = `{"id":${JSON.stringify(id)},"amount":${order.amount.toFixed(2)},`
		+ `"currency":${JSON.stringify(order.currency)},"status":"succeeded",`
		+ `"charge_id":${JSON.stringify(chargeId)},`
		+ `"created_at":${JSON.stringify(new Date().toISOString())}}`;
	return {location: `/payments/${id}`, body};
}

// An Express application with what comes before the idempotency layer:
// GET /healthz, the JSON body parser and authentication on /payments.
function baseApp(cfg) {
	const app = express();
	app.disable('x-powered-by');
	app.disable('etag');
	app.get('/healthz', (req, res) => {
		res.type('application/json').send('{"status":"ok"}');
	});
	app.use('/payments', express.json(), authenticate(loadAccounts(cfg.keysFile)));
	return app;
}

// The last handler: an error a library passed on keeps the status it set.
function errorHandler(err, req, res, next) { // eslint-disable-line no-unused-vars
	const status = res.statusCode >= 400 ? res.statusCode : (err.status || 500);
	if (res.headersSent) {
		return;
	}
	problem(res, status, status === 409 ? 'request-in-progress'
		: status < 500 ? 'bad-request' : 'internal-error', String(err.message || err));
}

// Runs the application made by makeApp(cfg) (a promise of an Express app)
// in cfg.workers processes; the primary stops its workers on SIGTERM and
// exits when one of them dies, so the bench sees a broken peer at once.
function serve(makeApp) {
	const cfg = settings();
	if (cfg.workers > 1 && cluster.isPrimary) {
		for (let i = 0; i < cfg.workers; i++) {
			cluster.fork();
		}
		let stopping = false;
		const stop = () => {
			stopping = true;
			for (const w of Object.values(cluster.workers)) {
				w.process.kill('SIGTERM');
			}
		};
		process.on('SIGTERM', stop);
		process.on('SIGINT', stop);
		cluster.on('exit', (w, code, signal) => {
			if (!stopping) {
				console.error(`worker ${w.process.pid} exited (${signal || code})`);
				stop();
				process.exitCode = 1;
			}
		});
		return;
	}
	makeApp(cfg).then((app) => {
		app.use(errorHandler);
		const server = app.listen(cfg.port, '127.0.0.1');
		server.keepAliveTimeout = 65_000;
		process.on('SIGTERM', () => process.exit(0));
	}).catch((err) => {
		console.error(err);
		process.exit(1);
	});
}

module.exports = {baseApp, pay, parseOrder, problem, requireKey, serve};
