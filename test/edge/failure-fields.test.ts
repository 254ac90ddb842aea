import * as assert from 'uvu/assert';
import { corsPolicy } from '../../adapters/http/server/cors.js';
import { startService } from '../support/http.js';
import { suiteWith } from '../support/suites.js';
import { exchange, logLineOf, type WireResponse } from './wire.js';

/**
 * An app failure (a route's 404) and the server's own refusals (through a response: two Host fields; on the bare
 * socket: a malformed request line) carry the same contract fields, from the one writer of failures
 * (server/answer.ts), and each is logged in the same shape.
 */
const ORIGIN = 'https://app.example';
const { test, subject, run } = suiteWith('edge: every failure carries the same fields', async () => {
  const svc = await startService({ cors: corsPolicy([ORIGIN]) });
  return { svc, teardown: svc.close };
});

/** The fields each failure must carry, whoever answered it. */
const CONTRACT = ['cache-control', 'content-length', 'content-type', 'vary', 'x-content-type-options', 'x-request-id'];

const contractFields = (res: WireResponse) =>
  Object.fromEntries(
    CONTRACT.map((name) => [name, name === 'x-request-id' || name === 'content-length' ? 'set' : res.headers[name]]),
  );

test('an app failure and a server refusal carry the same fields, values and log line shape', async (ctx) => {
  const svc = subject(ctx).svc;
  const app = await exchange(svc.port, `GET /nowhere HTTP/1.1\r\nHost: x\r\nOrigin: ${ORIGIN}\r\n\r\n`);
  const server = await exchange(svc.port, `GET /plants HTTP/1.1\r\nHost: x\r\nHost: y\r\nOrigin: ${ORIGIN}\r\n\r\n`);
  const bare = await exchange(
    svc.port,
    'POST /plants HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n',
  );
  assert.is(app.status, 404);
  assert.is(server.status, 400);
  assert.is(bare.status, 400);
  for (const res of [app, server, bare]) {
    for (const name of CONTRACT) assert.type(res.headers[name], 'string', `${res.status} carries ${name}`);
    assert.is(Number(res.headers['content-length']), Buffer.byteLength(res.body));
    assert.equal(Object.keys(JSON.parse(res.body) as object).sort(), ['error', 'message']);
  }
  assert.equal(contractFields(server), contractFields(app));
  assert.equal(contractFields(bare), contractFields(app));
  // A request that was read names its origin's CORS fields, whoever refused it.
  assert.is(server.headers['access-control-allow-origin'], ORIGIN);
  assert.is(app.headers['access-control-allow-origin'], ORIGIN);
  const lines = [app, server, bare].map((res) => logLineOf(svc.logs(), res));
  for (const line of lines) {
    assert.is(line['msg'], 'request');
    for (const key of ['reqId', 'status']) assert.ok(key in line, `the log line has ${key}`);
  }
});

run();
