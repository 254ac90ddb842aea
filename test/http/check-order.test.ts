import * as assert from 'uvu/assert';
import { serviceSuite, type Who } from '../support/http.js';

/**
 * One check order on every plants route: credentials (401), scope (403), then the request's own input (415, 413,
 * 400). Each test sends an input that is bad in every later way, so only the first check may answer.
 */
const { test, run } = serviceSuite('HTTP check order');

const bigBody = JSON.stringify({ id: 1, name: 'x'.repeat(20_000) });

const statuses = async (
  call: (who: Who | undefined) => Promise<{ status: number }>,
  order: ReadonlyArray<Who | undefined>,
): Promise<number[]> => {
  const out: number[] = [];
  for (const who of order) out.push((await call(who)).status);
  return out;
};

test('DELETE /plants/{id} with a bad id: 401 without a token, 403 without plants:write, then 400', async ({ svc }) => {
  const call = (who: Who | undefined) =>
    svc.call('DELETE', '/plants/abc', who === undefined ? {} : { token: svc.token[who] });
  assert.equal(await statuses(call, [undefined, 'aliceReader', 'aliceWriter']), [401, 403, 400]);
});

test('GET /plants with a bad limit: 401 without a token, 403 without plants:read, then 400', async ({ svc }) => {
  const call = (who: Who | undefined) =>
    svc.call('GET', '/plants?limit=0&cursor=%25', who === undefined ? {} : { token: svc.token[who] });
  assert.equal(await statuses(call, [undefined, 'aliceWriter', 'aliceReader']), [401, 403, 400]);
});

test('POST /plants with a bad body: 401, then 403, then 415 for the media type before 413 and 400', async ({ svc }) => {
  const call = (who: Who | undefined) =>
    svc.call('POST', '/plants', {
      body: bigBody,
      headers: { 'content-type': 'text/plain' },
      ...(who === undefined ? {} : { token: svc.token[who] }),
    });
  assert.equal(await statuses(call, [undefined, 'aliceReader', 'aliceWriter']), [401, 403, 415]);
});

test('POST /plants with JSON too large and malformed: 413 before 400', async ({ svc }) => {
  const res = await svc.call('POST', '/plants', { token: svc.token.alice, body: `{${bigBody}` });
  assert.is(res.status, 413);
});

test('an unknown token is 401 on every route, whatever the input', async ({ svc }) => {
  for (const [method, path] of [
    ['GET', '/plants?limit=0'],
    ['POST', '/plants'],
    ['DELETE', '/plants/abc'],
  ] as const) {
    const body = method === 'POST' ? { body: '{' } : {};
    assert.is((await svc.call(method, path, { token: 'no-such-token', ...body })).status, 401, `${method} ${path}`);
  }
});

run();
