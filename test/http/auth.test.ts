import * as assert from 'uvu/assert';
import { downTokenStore } from '../support/fakes.js';
import { serviceSuite } from '../support/http.js';

const { test, run } = serviceSuite('HTTP authentication and scopes');

const REALM = 'Bearer realm="plants"';
const protectedCalls = [
  ['GET', '/plants'],
  ['POST', '/plants'],
  ['DELETE', '/plants/1'],
] as const;

test('every plants operation without Authorization is 401 with the bare Bearer challenge', async ({ svc }) => {
  for (const [method, path] of protectedCalls) {
    const res = await svc.call(method, path);
    assert.is(res.status, 401, `${method} ${path}`);
    assert.is(res.headers.get('www-authenticate'), REALM);
    assert.match((res.json() as { message: string }).message, /bearer token/);
  }
});

test('a wrong scheme or a malformed token is 401 with the bare challenge', async ({ svc }) => {
  const token = svc.token.alice;
  for (const authorization of [
    `Basic ${token}`,
    `Bearer`,
    `Bearer `,
    `Bearer ${token} extra`,
    `Bearer to,ken`,
    `Bearer =abc`,
    `Bearer ${'a'.repeat(4097)}`,
    `Token ${token}`,
    `Bearer\t${token}`,
  ]) {
    const res = await svc.call('GET', '/plants', { headers: { authorization } });
    assert.is(res.status, 401, authorization.slice(0, 40));
    assert.is(res.headers.get('www-authenticate'), REALM, authorization.slice(0, 40));
  }
});

test('the scheme name is case-insensitive', async ({ svc }) => {
  for (const scheme of ['bearer', 'BEARER', 'BeArEr']) {
    const res = await svc.call('GET', '/plants', { headers: { authorization: `${scheme} ${svc.token.alice}` } });
    assert.is(res.status, 200, scheme);
  }
});

test('a token of 4096 characters is read, and unknown', async ({ svc }) => {
  const res = await svc.call('GET', '/plants', { token: 'a'.repeat(4094) + '==' });
  assert.is(res.status, 401);
  assert.is(res.headers.get('www-authenticate'), `${REALM}, error="invalid_token"`);
});

test('an unknown token is 401 invalid_token', async ({ svc }) => {
  const res = await svc.call('GET', '/plants', { token: 'no-such-token' });
  assert.is(res.status, 401);
  assert.is(res.headers.get('www-authenticate'), `${REALM}, error="invalid_token"`);
});

test('a token without plants:write is 403 on create and delete, naming the scope', async ({ svc }) => {
  for (const [method, path] of [
    ['POST', '/plants'],
    ['DELETE', '/plants/1'],
  ] as const) {
    const res = await svc.call(method, path, { token: svc.token.aliceReader, body: '{"id":1,"name":"x"}' });
    assert.is(res.status, 403, `${method} ${path}`);
    assert.is(res.headers.get('www-authenticate'), `${REALM}, error="insufficient_scope", scope="plants:write"`);
  }
});

test('a token without plants:read is 403 on list, naming the scope', async ({ svc }) => {
  for (const who of ['aliceWriter', 'nobody'] as const) {
    const res = await svc.call('GET', '/plants', { token: svc.token[who] });
    assert.is(res.status, 403);
    assert.is(res.headers.get('www-authenticate'), `${REALM}, error="insufficient_scope", scope="plants:read"`);
  }
});

test('authentication comes before the body: a bad body unauthenticated is 401, never 400, 413 or 415', async ({
  svc,
}) => {
  const bad = [
    { body: '{not json', headers: {} },
    { body: '{"id":"7"}', headers: {} },
    { body: 'x'.repeat(20000), headers: {} },
    { body: '{"id":1,"name":"x"}', headers: { 'content-type': 'text/plain' } },
  ];
  for (const { body, headers } of bad) {
    const res = await svc.call('POST', '/plants', { body, headers });
    assert.is(res.status, 401);
    const unknown = await svc.call('POST', '/plants', { body, headers, token: 'no-such-token' });
    assert.is(unknown.status, 401);
  }
});

test('the scope is checked before the body: a reader posting a bad body is 403', async ({ svc }) => {
  const res = await svc.call('POST', '/plants', { token: svc.token.aliceReader, body: '{nope' });
  assert.is(res.status, 403);
});

test('no token ever appears in a log line', async ({ svc }) => {
  await svc.call('GET', '/plants', { token: svc.token.alice });
  await svc.call('GET', '/plants', { token: 'unknown-secret-token' });
  const text = JSON.stringify(svc.logs());
  assert.not.ok(text.includes(svc.token.alice));
  assert.not.ok(text.includes('unknown-secret-token'));
});

run();

const { test: down, run: runDown } = serviceSuite('HTTP with the token store down', { tokens: downTokenStore });

down('a request with a token is 503 with Retry-After, never 401', async ({ svc }) => {
  for (const [method, path] of protectedCalls) {
    const res = await svc.call(method, path, {
      token: 'any-token',
      body: method === 'POST' ? '{}' : undefined,
    } as never);
    assert.is(res.status, 503, `${method} ${path}`);
    assert.is(res.headers.get('retry-after'), '1');
    assert.match((res.json() as { message: string }).message, /authentication is unavailable/);
  }
});

down('a request without a token is still 401: nothing needs the store', async ({ svc }) => {
  assert.is((await svc.call('GET', '/plants')).status, 401);
});

runDown();
