import * as assert from 'uvu/assert';
import { encodeCursor } from '../../adapters/http/api/codecs.js';
import type { PlantId } from '../../domain/plant.js';
import { serviceSuite, type Service } from '../support/http.js';
import { assertLinear, perCallMsAsync } from './cost.js';

/**
 * GET /plants reads its whole query string. Node's querystring (polka's req.query) stops at 1000 parameters, so a
 * `limit` or `cursor` after 1000 others used to go unseen: `limit=0` was served 200.
 */
const { test, run } = serviceSuite('edge: GET /plants reads every query parameter');

const junk = (n: number) => Array.from({ length: n }, (_, i) => `j${i}=1`).join('&');
const list = (svc: Service, query: string) => svc.call('GET', `/plants?${query}`, { token: svc.token.alice });
const messageOf = (res: { json: () => unknown }) => (res.json() as { message: string }).message;

const seed = async (svc: Service, count: number) => {
  for (let id = 1; id <= count; id++) {
    const res = await svc.call('POST', '/plants', { token: svc.token.alice, body: `{"id": ${id}, "name": "p${id}"}` });
    assert.is(res.status, 200);
  }
};

test('limit=0 after 1000 other parameters is 400, as it is first', async ({ svc }) => {
  for (const query of [`${junk(1000)}&limit=0`, `${junk(1500)}&limit=abc`, `${junk(2000)}&limit=`]) {
    const res = await list(svc, query);
    assert.is(res.status, 400, query.slice(-12));
    assert.is(messageOf(res), 'limit: must be an integer from 1 to 2147483647');
  }
});

test('limit given twice is 400 wherever the second one is', async ({ svc }) => {
  for (const query of [`limit=5&${junk(1000)}&limit=5`, `${junk(1200)}&limit=1&limit=2`]) {
    const res = await list(svc, query);
    assert.is(res.status, 400);
    assert.is(messageOf(res), 'limit: must be given at most once');
  }
});

test('a limit after 1000 other parameters is served, and names the page size', async ({ svc }) => {
  await seed(svc, 3);
  const res = await list(svc, `${junk(1000)}&limit=2`);
  assert.is(res.status, 200);
  assert.is((res.json() as unknown[]).length, 2);
  assert.match(res.headers.get('link') ?? '', /^<\/plants\?limit=2&cursor=/);
});

test('a bad or repeated cursor after 1000 other parameters is 400', async ({ svc }) => {
  const good = encodeCursor(1n as PlantId);
  const bad = await list(svc, `${junk(1000)}&cursor=nope!`);
  assert.is(bad.status, 400);
  assert.is(messageOf(bad), 'cursor: must be a cursor taken from a next link');
  const twice = await list(svc, `cursor=${good}&${junk(1000)}&cursor=${good}`);
  assert.is(twice.status, 400);
  assert.is(messageOf(twice), 'cursor: must be given at most once');
});

test('parameter names are percent-decoded: lim%69t=0 is limit=0', async ({ svc }) => {
  const res = await list(svc, `${junk(1000)}&lim%69t=0`);
  assert.is(res.status, 400);
  assert.match(messageOf(res), /^limit: /);
});

test('reading the query is linear in its length', async ({ svc }) => {
  // Node refuses a request head over its header size limit (16 KiB by default); 1 KiB against 12 KiB stays under it.
  const cost = (params: number) => perCallMsAsync(() => list(svc, `${junk(params)}&limit=1`));
  const small = await cost(150);
  const large = await cost(150 * 12);
  assertLinear('a query of 12x the parameters', small, large, 12, 2);
});

run();
