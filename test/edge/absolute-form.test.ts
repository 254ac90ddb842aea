import * as assert from 'uvu/assert';
import { serviceSuite } from '../support/http.js';
import { assertContractFailure, exchange } from './wire.js';

/** RFC 9112 §3.2.2: a request target in absolute form is served like its origin form (path and query). */
const { test, run } = serviceSuite('edge: absolute-form request targets');

const get = (port: number, target: string, headers = '') =>
  exchange(port, `GET ${target} HTTP/1.1\r\nHost: x\r\n${headers}Connection: close\r\n\r\n`);

test('GET http://host:port/healthz is served like GET /healthz, and logged under its route', async ({ svc }) => {
  const res = await get(svc.port, `http://127.0.0.1:${svc.port}/healthz`);
  assert.is(res.status, 200);
  assert.is(res.body, '{"status":"ok"}');
  const line = svc.logs().find((l) => l['reqId'] === res.headers['x-request-id']);
  assert.is(line?.['route'], 'GET /healthz');
});

test('the scheme and host are case-insensitive and any authority is accepted', async ({ svc }) => {
  for (const target of ['HTTP://Example.COM/healthz', 'https://user@other:8443/healthz', 'http://[::1]/healthz']) {
    const res = await get(svc.port, target);
    assert.is(res.status, 200, target);
  }
});

test('the query of an absolute-form target is the query the route reads', async ({ svc }) => {
  const auth = `Authorization: Bearer ${svc.token.alice}\r\n`;
  const refused = await get(svc.port, 'http://x/plants?limit=0', auth);
  assertContractFailure(refused, 400, { closes: false });
  assert.match(refused.body, /limit/);
  const served = await get(svc.port, 'http://x/plants?limit=5', auth);
  assert.is(served.status, 200);
  assert.is(served.body, '[]');
});

test('an absolute-form target with no path is the root, and paths stay exact', async ({ svc }) => {
  assertContractFailure(await get(svc.port, 'http://x'), 404, { closes: false });
  assertContractFailure(await get(svc.port, 'http://x?y=1'), 404, { closes: false });
  assertContractFailure(await get(svc.port, 'http://x/HEALTHZ'), 404, { closes: false });
});

test('a path id in absolute form reaches the route: DELETE of a missing plant is its 404', async ({ svc }) => {
  const res = await exchange(
    svc.port,
    `DELETE http://x/plants/77 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${svc.token.alice}\r\nConnection: close\r\n\r\n`,
  );
  assertContractFailure(res, 404, { closes: false });
  assert.match(res.body, /no plant with this id/);
});

test('an absolute URI of another scheme is 400', async ({ svc }) => {
  assertContractFailure(await get(svc.port, 'ftp://x/healthz'), 400);
});

run();
