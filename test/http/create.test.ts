import { randomInt } from 'node:crypto';
import * as assert from 'uvu/assert';
import { JSON_LIMITS } from '../../adapters/http/api/json.js';
import { downRepository } from '../support/fakes.js';
import { httpSuite, rawRequest, type Service, serviceSuite } from '../support/http.js';
import { storageBackends } from '../support/storage-backends.js';
import { openWire } from '../edge/wire.js';

/** An id no other test of the suite uses (tests share one service and owner, never a counter). */
const anId = (): number => randomInt(1, 2 ** 47);
const post = (svc: Service, body: string, headers: Record<string, string> = {}, who: 'alice' | 'bob' = 'alice') =>
  svc.call('POST', '/plants', { token: svc.token[who], body, headers });
const list = async (svc: Service, who: 'alice' | 'bob' = 'alice') =>
  (await svc.call('GET', '/plants?limit=1000', { token: svc.token[who] })).json();
const messageOf = (res: { json: () => unknown }) => (res.json() as { message: string }).message;

for (const backend of storageBackends()) {
  const { test, run } = httpSuite('HTTP POST /plants', backend);

  test('creates a plant and answers the Plant shape: name and tag, never the id', async ({ svc }) => {
    const res = await post(svc, JSON.stringify({ id: anId(), name: 'Fern', tag: 'green' }));
    assert.is(res.status, 200);
    assert.is(res.text, '{"name":"Fern","tag":"green"}');
    const untagged = await post(svc, JSON.stringify({ id: anId(), name: 'Moss' }));
    assert.is(untagged.text, '{"name":"Moss"}', 'an absent tag is omitted');
  });

  test('ids beyond 2^53 are kept exact: 9007199254740993 and 9007199254740992 are two plants', async ({ svc }) => {
    const bob = 'bob' as const;
    assert.is((await post(svc, '{"id": 9007199254740993, "name": "odd"}', {}, bob)).status, 200);
    assert.is((await post(svc, '{"id": 9007199254740992, "name": "even"}', {}, bob)).status, 200);
    assert.equal(await list(svc, bob), [{ name: 'even' }, { name: 'odd' }]);
    assert.is((await svc.call('DELETE', '/plants/9007199254740993', { token: svc.token.bob })).status, 204);
    assert.equal(await list(svc, bob), [{ name: 'even' }]);
    assert.is((await svc.call('DELETE', '/plants/9007199254740992', { token: svc.token.bob })).status, 204);
  });

  test('both ends of the int64 range are accepted', async ({ svc }) => {
    assert.is((await post(svc, '{"id": 9223372036854775807, "name": "max"}')).status, 200);
    assert.is((await post(svc, '{"id": -9223372036854775808, "name": "min"}')).status, 200);
    assert.is((await svc.call('DELETE', '/plants/9223372036854775807', { token: svc.token.alice })).status, 204);
    assert.is((await svc.call('DELETE', '/plants/-9223372036854775808', { token: svc.token.alice })).status, 204);
  });

  test('a number with a zero fraction is that integer: 7.0 and 7e0 retry the create of 7', async ({ svc }) => {
    assert.is((await post(svc, '{"id": 7, "name": "seven"}')).status, 200);
    for (const id of ['7.0', '7e0', '0.7e1', '70E-1']) {
      const res = await post(svc, `{"id": ${id}, "name": "seven"}`);
      assert.is(res.status, 200, id);
      const different = await post(svc, `{"id": ${id}, "name": "other"}`);
      assert.is(different.status, 409, id);
    }
  });

  test('an id that is not an int64 is 400 naming id', async ({ svc }) => {
    for (const id of [
      '"7"',
      '7.5',
      'true',
      'null',
      '9223372036854775808',
      '-9223372036854775809',
      '1e400',
      '[]',
      '{}',
      '7.000000000000000001',
    ]) {
      const res = await post(svc, `{"id": ${id}, "name": "x"}`);
      assert.is(res.status, 400, id);
      assert.match(messageOf(res), /^id: /, id);
    }
    const missing = await post(svc, '{"name": "x"}');
    assert.is(messageOf(missing), 'id: is required');
  });

  test('an id sent as a string is 400 saying that the id is a JSON number, not a string', async ({ svc }) => {
    const res = await post(svc, '{"id": "7", "name": "x"}');
    assert.is(res.status, 400);
    assert.match(messageOf(res), /^id: must be a JSON number, not a string: write 7, not "7" \(an integer from /);
  });

  test('a name breaking its rule is 400 naming name and the rule', async ({ svc }) => {
    const cases: Array<[unknown, string]> = [
      ['', 'name: must be 1 to 200 characters'],
      ['x'.repeat(201), 'name: must be 1 to 200 characters'],
      ['   ', 'name: must contain a non-whitespace character'],
      ['a\u0000b', 'name: must not contain control characters'],
      ['tab\there', 'name: must not contain control characters'],
      ['del\u007f', 'name: must not contain control characters'],
      [42, 'name: must be a string of 1 to 200 characters'],
      [null, 'name: must be a string of 1 to 200 characters, not null'],
      [undefined, 'name: is required'],
    ];
    for (const [name, message] of cases) {
      const res = await post(svc, JSON.stringify({ id: anId(), name }));
      assert.is(res.status, 400, JSON.stringify(name));
      assert.is(messageOf(res), message);
    }
    const lone = await post(svc, `{"id": ${anId()}, "name": "a\\ud800"}`);
    assert.is(messageOf(lone), 'name: must be well-formed Unicode (no lone surrogates)');
  });

  test('200 code points are a valid name, counted as code points', async ({ svc }) => {
    const res = await post(svc, JSON.stringify({ id: anId(), name: '🌵'.repeat(200) }));
    assert.is(res.status, 200);
  });

  test('a tag breaking its rule is 400 naming tag; null is 400 with a message that says to leave tag out', async ({
    svc,
  }) => {
    for (const [tag, message] of [
      [null, 'tag: must be left out when there is none, not null (or be a string of 1 to 100 characters)'],
      ['', 'tag: must be 1 to 100 characters'],
      ['t'.repeat(101), 'tag: must be 1 to 100 characters'],
      ['\n', 'tag: must not contain control characters'],
    ] as const) {
      const res = await post(svc, JSON.stringify({ id: anId(), name: 'x', tag }));
      assert.is(res.status, 400, JSON.stringify(tag));
      assert.is(messageOf(res), message);
    }
  });

  test('a rejected create stores nothing', async ({ svc }) => {
    const before = await list(svc, 'bob');
    await post(svc, '{"id": 55, "name": ""}', {}, 'bob');
    await post(svc, '{"id": 55, "name": "ok", "tag": null}', {}, 'bob');
    assert.equal(await list(svc, 'bob'), before);
  });

  test('other members are ignored: not stored, not echoed; __proto__ and constructor change nothing', async ({
    svc,
  }) => {
    const id = anId();
    const res = await post(
      svc,
      `{"id": ${id}, "name": "Fern", "color": "red", "__proto__": {"tag": "evil", "admin": true}, "constructor": {"prototype": {"x": 1}}}`,
    );
    assert.is(res.status, 200);
    assert.is(res.text, '{"name":"Fern"}');
    assert.is(({} as Record<string, unknown>)['admin'], undefined, 'no prototype was polluted');
    const again = await post(svc, `{"id": ${id}, "name": "Fern"}`);
    assert.is(again.status, 200, 'the stored plant has no tag');
  });

  test('a body that is JSON but not an object is 400', async ({ svc }) => {
    for (const body of ['[]', '[{"id":1,"name":"x"}]', '"x"', '1', 'null', 'true']) {
      const res = await post(svc, body);
      assert.is(res.status, 400, body);
      assert.is(messageOf(res), 'body: must be a JSON object');
    }
  });

  test('a body that is not JSON is 400', async ({ svc }) => {
    for (const body of [
      '',
      '{',
      '{"id":1,"name":"x"',
      "{'id':1}",
      '{"id":1,"name":"x"} trailing',
      '{"id":01,"name":"x"}',
      '{"id":NaN,"name":"x"}',
      '{"id":1,"id":2,"name":"x"}',
    ]) {
      const res = await post(svc, body);
      assert.is(res.status, 400, body);
      assert.match(messageOf(res), /^body: /, body);
    }
  });

  test('a deeply nested body is 400, and the service keeps serving', async ({ svc }) => {
    const deep = '['.repeat(8000) + ']'.repeat(8000);
    const res = await post(svc, deep);
    assert.is(res.status, 400);
    const levels = JSON_LIMITS.maxDepth - 1; // the deepest ignored member allowed, under the body's own object
    const nested = `{"id": ${anId()}, "name": "x", "extra": ${'{"a":'.repeat(levels)}1${'}'.repeat(levels)}}`;
    assert.is((await post(svc, nested)).status, 200);
    assert.is((await svc.call('GET', '/healthz')).status, 200);
  });

  test('a body that is not UTF-8 is 400', async ({ svc }) => {
    const res = await svc.call('POST', '/plants', {
      token: svc.token.alice,
      body: Buffer.concat([Buffer.from('{"id": 1, "name": "'), Buffer.from([0xff, 0xfe]), Buffer.from('"}')]),
    });
    assert.is(res.status, 400);
    assert.is(messageOf(res), 'body: must be UTF-8 encoded');
  });

  test('Content-Type must be application/json (parameters allowed, another charset not): else 415', async ({ svc }) => {
    for (const type of [
      'text/plain',
      'application/x-www-form-urlencoded',
      'application/json-patch+json',
      'application/json; charset=latin1',
      'multipart/form-data',
    ]) {
      const res = await post(svc, JSON.stringify({ id: anId(), name: 'x' }), { 'content-type': type });
      assert.is(res.status, 415, type);
    }
    const none = await svc.call('POST', '/plants', {
      token: svc.token.alice,
      body: JSON.stringify({ id: anId(), name: 'x' }),
      json: false,
      headers: {},
    });
    // fetch labels a string body text/plain when no type is given
    assert.is(none.status, 415);
    for (const type of [
      'application/json; charset=utf-8',
      'Application/JSON',
      'application/json;charset="UTF-8"',
      'application/json; charset=utf8',
    ]) {
      const res = await post(svc, JSON.stringify({ id: anId(), name: 'x' }), { 'content-type': type });
      assert.is(res.status, 200, type);
    }
  });

  test('a body with a Content-Encoding other than identity is 415 and stores nothing', async ({ svc }) => {
    for (const coding of ['gzip', 'br', 'deflate, gzip']) {
      const id = anId();
      const res = await post(svc, JSON.stringify({ id, name: 'coded' }), { 'content-encoding': coding });
      assert.is(res.status, 415, coding);
      assert.match(messageOf(res), /^content-encoding: /);
      assert.is(res.headers.get('accept-encoding'), 'identity');
      assert.is((await svc.call('DELETE', `/plants/${id}`, { token: svc.token.alice })).status, 404, coding);
    }
    const res = await post(svc, JSON.stringify({ id: anId(), name: 'plain' }), { 'content-encoding': 'Identity' });
    assert.is(res.status, 200);
  });

  test('a body of exactly the limit is read; one byte more is 413', async ({ svc }) => {
    const base = JSON.stringify({ id: anId(), name: 'x' });
    const exact = base.slice(0, -1) + ' '.repeat(16384 - base.length) + '}';
    assert.is(Buffer.byteLength(exact), 16384);
    assert.is((await post(svc, exact)).status, 200);
    const over = base.slice(0, -1) + ' '.repeat(16385 - base.length) + '}';
    const res = await post(svc, over);
    assert.is(res.status, 413);
    assert.is(messageOf(res), 'body: must be at most 16384 bytes');
  });

  test('a declared length over the limit is 413 before any of the body is sent', async ({ svc }) => {
    const res = await rawRequest(svc.port, [
      `POST /plants HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${svc.token.alice}\r\nContent-Type: application/json\r\nContent-Length: 1000000000\r\n\r\n`,
    ]);
    assert.is(res.status, 413);
    // The body may still be on its way: the answer goes without `Connection: close` (Node would reset the connection
    // under it) and the connection is closed gracefully after it (test/edge/oversized-body.test.ts).
    assert.is((JSON.parse(res.body) as { error: number }).error, 413);
  });

  test('a chunked body is cut off at the limit with 413, without waiting for the rest', async ({ svc }) => {
    const chunk = (s: string) => `${Buffer.byteLength(s).toString(16)}\r\n${s}\r\n`;
    const res = await rawRequest(
      svc.port,
      [
        `POST /plants HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${svc.token.alice}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n`,
        chunk('{"id": 1, "name": "' + 'x'.repeat(10000)),
        chunk('y'.repeat(10000)),
        // the body never ends: the answer must not wait for it
      ],
      5,
    );
    assert.is(res.status, 413);
  });

  test('a chunked body within the limit is read whole', async ({ svc }) => {
    const chunk = (s: string) => `${Buffer.byteLength(s).toString(16)}\r\n${s}\r\n`;
    const res = await rawRequest(
      svc.port,
      [
        `POST /plants HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${svc.token.alice}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n`,
        chunk(`{"id": ${anId()}, `),
        chunk('"name": "chunked"}'),
        '0\r\n\r\n',
      ],
      5,
    );
    assert.is(res.status, 200);
    assert.is(res.body, '{"name":"chunked"}');
  });

  test('a body that comes after its headers, in pieces, is read as it arrives', async ({ svc }) => {
    const id = anId();
    const body = `{"id": ${id}, "name": "late"}`;
    const res = await rawRequest(
      svc.port,
      [
        `POST /plants HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${svc.token.alice}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n`,
        body.slice(0, 9),
        body.slice(9),
      ],
      20,
    );
    assert.is(res.status, 200);
    assert.is(res.body, '{"name":"late"}');
  });

  test('bodies sent with their headers, three requests in one write, are each read whole on the one connection', async ({
    svc,
  }) => {
    const ids = [anId(), anId(), anId()];
    const request = (id: number) => {
      const body = `{"id": ${id}, "name": "with head ${id}"}`;
      return `POST /plants HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${svc.token.alice}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`;
    };
    const wire = await openWire(svc.port);
    try {
      wire.write(ids.map(request).join(''));
      await wire.response(3);
      assert.equal(
        wire.responses().map((r) => [r.status, r.body]),
        ids.map((id) => [200, `{"name":"with head ${id}"}`]),
      );
    } finally {
      wire.destroy();
    }
  });

  test('a retried identical create is 200 with the stored plant; a different one is 409 and changes nothing', async ({
    svc,
  }) => {
    const id = anId();
    assert.is((await post(svc, JSON.stringify({ id, name: 'Fern', tag: 'a' }))).status, 200);
    const retry = await post(svc, JSON.stringify({ id, name: 'Fern', tag: 'a', note: 'ignored' }));
    assert.is(retry.status, 200);
    assert.is(retry.text, '{"name":"Fern","tag":"a"}');
    for (const body of [
      { id, name: 'Palm', tag: 'a' },
      { id, name: 'Fern' },
      { id, name: 'Fern', tag: 'b' },
    ]) {
      const res = await post(svc, JSON.stringify(body));
      assert.is(res.status, 409, JSON.stringify(body));
    }
    assert.is((await post(svc, JSON.stringify({ id, name: 'Fern', tag: 'a' }))).status, 200, 'still the first plant');
  });

  test('two owners can each have plant 7', async ({ svc }) => {
    assert.is((await post(svc, '{"id": 7, "name": "bob seven"}', {}, 'bob')).status, 200);
    const bobs = (await list(svc, 'bob')) as Array<{ name: string }>;
    assert.ok(bobs.some((p) => p.name === 'bob seven'));
    const alices = (await list(svc, 'alice')) as Array<{ name: string }>;
    assert.not.ok(alices.some((p) => p.name === 'bob seven'));
  });

  test('of 20 concurrent creates of one id exactly one stores; each other gets 200 if identical, else 409', async ({
    svc,
  }) => {
    const id = anId();
    const mine = (i: number) => (i % 2 === 0 ? 'same name' : `racer ${i}`);
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) => post(svc, JSON.stringify({ id, name: mine(i) }), {}, 'bob')),
    );
    const stored = (results.find((r) => r.status === 200)?.json() as { name: string }).name;
    for (const [i, r] of results.entries()) {
      assert.is(r.status, mine(i) === stored ? 200 : 409, `racer ${i} (${mine(i)}) with ${stored} stored`);
    }
    const bobs = (await list(svc, 'bob')) as Array<{ name: string }>;
    assert.is(bobs.filter((p) => p.name === 'same name' || p.name.startsWith('racer')).length, 1, 'one plant stored');
  });

  run();
}

const { test: down, run: runDown } = serviceSuite('HTTP POST /plants with storage down', { plants: downRepository });
down('a valid create is 503 with Retry-After', async ({ svc }) => {
  const res = await post(svc, '{"id": 1, "name": "x"}');
  assert.is(res.status, 503);
  assert.is(res.headers.get('retry-after'), '1');
  assert.is(messageOf(res), 'storage is unavailable, retry later');
});
runDown();
