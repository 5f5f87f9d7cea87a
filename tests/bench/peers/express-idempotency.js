// SPDX-License-Identifier: MIT
// express-idempotency.js: POST /payments behind express-idempotency's
// middleware, its records in Redis through express-idempotency-redis-adapter
// (written from both packages' READMEs). Settings: common.js.
//
// The middleware looks a key up, creates its record (the request) when it is
// new and lets the handler run; it stores the answer when the handler sends
// it (after the send: the library's choice), and for a key it has seen it
// sends the stored answer itself (isHit() tells the handler) or 409 while the
// first request is in progress.
'use strict';

const {idempotency, getSharedIdempotencyService} = require('express-idempotency');
const RedisAdapter = require('express-idempotency-redis-adapter').default;
const common = require('./common');

// The middleware reads the key from this header, which holds the account and
// the client's key: keys are the account's own, as idem's are.
const SCOPED_KEY = 'X-Peer-Scoped-Key';

async function makeApp(cfg) {
	const adapter = new RedisAdapter({connectionConfig: {socket: {path: cfg.redisSocket}}});
	await adapter.connect();
	const app = common.baseApp(cfg);
	app.post('/payments', common.requireKey, (req, res, next) => {
		req.headers[SCOPED_KEY.toLowerCase()] = `${req.account} ${req.get('Idempotency-Key')}`;
		next();
	}, idempotency({idempotencyKeyHeader: SCOPED_KEY, dataAdapter: adapter}),
	async (req, res, next) => {
		const service = getSharedIdempotencyService();
		if (service.isHit(req)) {
			return;
		}
		const order = common.parseOrder(req.body);
		if (!order) {
			common.problem(res, 422, 'invalid-payment', 'amount and currency are required');
			return;
		}
		try {
			const p = await common.pay(order, cfg.latencyMs);
			res.removeHeader(SCOPED_KEY);
			res.status(201).location(p.location).type('application/json').send(p.body);
		} catch (err) {
			await service.reportError(req);
			next(err);
		}
	});
	return app;
}

common.serve(makeApp);
