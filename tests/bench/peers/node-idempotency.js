// SPDX-License-Identifier: MIT
// node-idempotency.js: POST /payments through @node-idempotency/core, its
// records in Redis through @node-idempotency/storage-adapter-redis (written
// from their READMEs and type declarations; the Express middleware the core's
// README names, @node-idempotency/express, is not published, so this is the
// flow the README gives: onRequest before the business logic, onResponse
// with the answer after it). Settings: common.js.
//
// onRequest marks a new key in progress (SET NX) and returns nothing, or the
// stored answer of a completed one; it throws while the first request is in
// progress (409 here) or when the body differs (422). The answer is stored
// by onResponse before it is sent.
'use strict';

const {Idempotency, IdempotencyError, IdempotencyErrorCodes} = require('@node-idempotency/core');
const {RedisStorageAdapter} = require('@node-idempotency/storage-adapter-redis');
const common = require('./common');

const STATUS = {
	[IdempotencyErrorCodes.IDEMPOTENCY_KEY_MISSING]: [400, 'idempotency-key-missing'],
	[IdempotencyErrorCodes.IDEMPOTENCY_KEY_LEN_EXEEDED]: [400, 'idempotency-key-invalid'],
	[IdempotencyErrorCodes.IDEMPOTENCY_FINGERPRINT_MISSMATCH]: [422, 'idempotency-key-reused'],
	[IdempotencyErrorCodes.REQUEST_IN_PROGRESS]: [409, 'request-in-progress'],
};

async function makeApp(cfg) {
	const storage = new RedisStorageAdapter({socket: {path: cfg.redisSocket}});
	await storage.connect();
	const idem = new Idempotency(storage, {enforceIdempotency: true});
	const app = common.baseApp(cfg);
	app.post('/payments', common.requireKey, async (req, res, next) => {
		// The request as the library sees it; the cache key's prefix names
		// the account, so keys are the account's own, as idem's are.
		const request = {
			method: 'POST',
			path: req.path,
			headers: {'idempotency-key': req.get('Idempotency-Key')},
			body: req.body,
			options: {cacheKeyPrefix: `node-idempotency:${req.account}`},
		};
		let stored;
		try {
			stored = await idem.onRequest(request);
		} catch (err) {
			if (err instanceof IdempotencyError && STATUS[err.code]) {
				common.problem(res, STATUS[err.code][0], STATUS[err.code][1], err.message);
				return;
			}
			next(err);
			return;
		}
		if (stored) {
			const a = stored.additional;
			if (a.location) {
				res.location(a.location);
			}
			res.status(a.status).type(a.type).send(stored.body);
			return;
		}
		const order = common.parseOrder(req.body);
		try {
			if (!order) {
				const body = JSON.stringify({type: '/problems/invalid-payment',
					title: 'amount and currency are required', status: 422});
				await idem.onResponse(request, {body, additional: {status: 422, type: 'application/problem+json'}});
				res.status(422).type('application/problem+json').send(body);
				return;
			}
			const p = await common.pay(order, cfg.latencyMs);
			await idem.onResponse(request, {body: p.body,
				additional: {status: 201, location: p.location, type: 'application/json'}});
			res.status(201).location(p.location).type('application/json').send(p.body);
		} catch (err) {
			next(err);
		}
	});
	return app;
}

common.serve(makeApp);
