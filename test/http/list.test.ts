import * as assert from 'uvu/assert';
import { encodeCursor } from '../../adapters/http/api/codecs.js';
import type { PlantId } from '../../domain/plant.js';
import { downRepository } from '../support/fakes.js';
import { httpSuite, type Service, serviceSuite } from '../support/http.js';
import { storageBackends } from '../support/storage-backends.js';

const create = async (svc: Service, id: bigint | number, name: string, who: 'alice' | 'bob' = 'alice') => {
  const res = await svc.call('POST', '/plants', {
    token: svc.token[who],
    body: `{"id": ${id}, "name": ${JSON.stringify(name)}}`,
  });
  assert.is(res.status, 200);
};
const get = (svc: Service, query = '', who: 'alice' | 'bob' | 'aliceReader' = 'aliceReader') =>
  svc.call('GET', `/plants${query}`, { token: svc.token[who] });
const NEXT = /^<\/plants\?limit=(\d+)&cursor=([A-Za-z0-9_-]+)>; rel="next"$/;

/** Follows next links from the first page, as a client would. */
const readAll = async (svc: Service, first: string, who: 'alice' | 'bob' | 'aliceReader' = 'aliceReader') => {
  const names: string[] = [];
  let path: string | undefined = first;
  let pages = 0;
  while (path !== undefined) {
    const res = await svc.call('GET', path, { token: svc.token[who] });
    assert.is(res.status, 200);
    names.push(...(res.json() as Array<{ name: string }>).map((p) => p.name));
    const link = res.headers.get('link');
    if (link !== null) assert.match(link, NEXT);
    path = link === null ? undefined : link.slice(1, link.indexOf('>'));
    pages++;
  }
  return { names, pages };
};

for (const backend of storageBackends()) {
  const { test, run } = httpSuite('HTTP GET /plants', backend);

  test('an owner with no plants gets [] and no link', async ({ svc }) => {
    const res = await get(svc);
    assert.is(res.status, 200);
    assert.is(res.text, '[]');
    assert.is(res.headers.get('link'), null);
  });

  test('lists only the caller’s owner’s plants, ascending by id over the whole int64 range', async ({ svc }) => {
    const ids = [9223372036854775807n, -9223372036854775808n, 0n, 9007199254740993n, 9007199254740992n, -1n, 10n, 9n];
    for (const id of ids) await create(svc, id, `p${id}`);
    await create(svc, 5n, 'bob plant', 'bob');
    const { names } = await readAll(svc, '/plants?limit=3');
    assert.equal(
      names,
      [...ids].sort((a, b) => (a < b ? -1 : 1)).map((id) => `p${id}`),
    );
    assert.equal((await get(svc, '', 'bob')).json(), [{ name: 'bob plant' }]);
  });

  test('limit must be one decimal integer from 1 to 2147483647', async ({ svc }) => {
    for (const q of [
      '?limit=0',
      '?limit=-1',
      '?limit=1.5',
      '?limit=abc',
      '?limit=',
      '?limit=1&limit=2',
      '?limit=2147483648',
      '?limit=+5',
      '?limit=1e2',
      '?limit=%201',
      '?limit=99999999999999999999',
    ]) {
      const res = await get(svc, q);
      assert.is(res.status, 400, q);
      assert.match((res.json() as { message: string }).message, /^limit: /, q);
    }
    assert.is((await get(svc, '?limit=2147483647')).status, 200);
    assert.is((await get(svc, '?limit=007')).status, 200);
    assert.is((await get(svc, '?other=1&limit=5')).status, 200, 'other parameters are ignored');
  });

  test('following next links yields every plant exactly once; the link repeats the served limit', async ({ svc }) => {
    for (let i = 0; i < 250; i++) await create(svc, 1_000_000 + i, `bulk ${i}`, 'bob');
    const first = await get(svc, '', 'bob');
    assert.is((first.json() as unknown[]).length, 100, 'default page is 100');
    assert.match(first.headers.get('link') ?? '', /^<\/plants\?limit=100&cursor=/);
    const { names, pages } = await readAll(svc, '/plants?limit=7', 'bob');
    assert.is(pages, Math.ceil(251 / 7));
    assert.is(new Set(names).size, names.length);
    assert.is(names.length, 251);
    const big = await get(svc, '?limit=5000', 'bob');
    assert.is((big.json() as unknown[]).length, 251, 'above 1000 is served as 1000, which holds all 251');
    assert.is(big.headers.get('link'), null);
  });

  test('a page that ends exactly on the last plant carries no next link', async ({ svc }) => {
    const res = await svc.call('GET', '/plants?limit=1', { token: svc.token.nobody });
    assert.is(res.status, 403);
    const all = (await get(svc, '?limit=1000')).json() as unknown[];
    const exact = await get(svc, `?limit=${all.length}`);
    assert.is(exact.headers.get('link'), null);
    const short = await get(svc, `?limit=${all.length - 1}`);
    assert.match(short.headers.get('link') ?? '', NEXT);
  });

  test('a cursor the service did not produce is 400', async ({ svc }) => {
    const forged = [
      'abc',
      '!!!',
      Buffer.from('1:abc').toString('base64url'),
      Buffer.from('2:5').toString('base64url'),
      Buffer.from('1:05').toString('base64url'),
      Buffer.from('1:-0').toString('base64url'),
      Buffer.from('1:9223372036854775808').toString('base64url'),
      Buffer.from('1:55').toString('base64'), // padded, not base64url
      encodeCursor(5n as PlantId) + 'A',
      '',
    ];
    for (const cursor of forged) {
      const res = await get(svc, `?cursor=${encodeURIComponent(cursor)}`);
      assert.is(res.status, 400, cursor);
      assert.is((res.json() as { message: string }).message, 'cursor: must be a cursor taken from a next link', cursor);
    }
    const twice = await get(svc, `?cursor=${encodeCursor(5n as PlantId)}&cursor=${encodeCursor(5n as PlantId)}`);
    assert.is(twice.status, 400);
  });

  test('a cursor from one owner only moves within the caller’s own plants', async ({ svc }) => {
    const alicePage = await get(svc, '?limit=1', 'aliceReader');
    const link = alicePage.headers.get('link') ?? '';
    const path = link.slice(1, link.indexOf('>'));
    const asBob = await svc.call('GET', path, { token: svc.token.bob });
    assert.is(asBob.status, 200);
    const bobNames = (asBob.json() as Array<{ name: string }>).map((p) => p.name);
    assert.ok(
      bobNames.every((n) => n.startsWith('bulk') || n === 'bob plant'),
      'only bob’s plants',
    );
  });

  test('a plant deleted before its page is read is not served', async ({ svc }) => {
    const first = await get(svc, '?limit=2', 'bob');
    const link = first.headers.get('link') ?? '';
    // bob's plants ascending: 5, 1000000, 1000001, ... ; the next page starts at 1000001
    assert.is((await svc.call('DELETE', '/plants/1000001', { token: svc.token.bob })).status, 204);
    const next = await svc.call('GET', link.slice(1, link.indexOf('>')), { token: svc.token.bob });
    assert.equal(
      (next.json() as Array<{ name: string }>).map((p) => p.name),
      ['bulk 2', 'bulk 3'],
    );
  });

  run();
}

const { test: down, run: runDown } = serviceSuite('HTTP GET /plants with storage down', { plants: downRepository });
down('is 503 with Retry-After', async ({ svc }) => {
  const res = await svc.call('GET', '/plants', { token: svc.token.alice });
  assert.is(res.status, 503);
  assert.is(res.headers.get('retry-after'), '1');
});
runDown();
