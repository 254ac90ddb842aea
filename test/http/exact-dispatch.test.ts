import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import polka, { type Request } from 'polka';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { exactDispatch } from '../../adapters/http/api/exact-dispatch.js';

/**
 * The shortcut in front of polka answers exactly what polka answers: a small polka app (exact routes, a method
 * fallback, a parameter route, a failing route) served through exactDispatch on a real server.
 */
const test = suite('exactDispatch: polka routes exact paths, remembered');

const seen = (req: Request) => JSON.stringify({ path: req.path, search: req.search, params: req.params, url: req.url });

const app = polka({
  onNoMatch: (_req, res) => void res.writeHead(404).end('no match'),
  onError: (err, _req, res) => void res.writeHead(500).end(`onError: ${typeof err === 'string' ? err : err.message}`),
})
  .get(/^\/a$/, (req, res) => void res.end(`GET a ${seen(req)}`))
  .post(/^\/a$/, (_req, res) => void res.end('POST a'))
  .all(/^\/a$/, (req, res) => void res.writeHead(405).end(`any ${req.method}`))
  .get(/^\/b\/(?<id>[^/]*)$/, (req, res) => void res.end(`GET b ${seen(req)}`))
  .get(/^\/thrown$/, () => {
    throw new Error('thrown');
  })
  .get(/^\/rejected$/, async () => {
    throw new Error('rejected');
  })
  .get(/^\/next$/, (_req, _res, next) => void next())
  .get(/^\/any-x/, (req, res) => void res.end(`prefix ${req.path}`));

/** Every route lookup, polka's own included: each request is routed once. */
let finds = 0;
const find = app.find.bind(app);
app.find = (method, path) => {
  finds += 1;
  return find(method, path);
};

let server: Server;
let base = '';
test.before(async () => {
  server = createServer(exactDispatch(app));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
test.after(() => new Promise<void>((r) => server.close(() => r())));

const call = async (method: string, path: string) => {
  const res = await fetch(`${base}${path}`, { method });
  return `${res.status} ${await res.text()}`;
};

test('an exact route answers with the handler polka finds, with polka request fields, every time', async () => {
  for (let i = 0; i < 3; i++) {
    assert.is(
      await call('GET', '/a?limit=2&x'),
      `200 GET a ${JSON.stringify({ path: '/a', search: '?limit=2&x', params: {}, url: '/a?limit=2&x' })}`,
    );
    assert.is(await call('POST', '/a'), '200 POST a');
    assert.is(await call('DELETE', '/a'), '405 any DELETE');
    assert.is(await call('HEAD', '/a'), '200 ', 'HEAD runs the GET handler, as polka does');
  }
});

test('a thrown or rejected handler error goes to onError; a handler calling next reaches onNoMatch', async () => {
  for (let i = 0; i < 2; i++) {
    assert.is(await call('GET', '/thrown'), '500 onError: thrown');
    assert.is(await call('GET', '/rejected'), '500 onError: rejected');
    assert.is(await call('GET', '/next'), '404 no match');
  }
});

test('parameter routes, unmatched paths and other spellings are polka’s own answers', async () => {
  assert.is(
    await call('GET', '/b/7?q=1'),
    `200 GET b ${JSON.stringify({ path: '/b/7', search: '?q=1', params: { id: '7' }, url: '/b/7?q=1' })}`,
  );
  assert.is(await call('GET', '/nope'), '404 no match');
  assert.is(await call('GET', '/A'), '404 no match');
  assert.is(await call('GET', '/a/'), '404 no match');
});

test('a parameter route, an unmatched path and an exact one are each routed once per request', async () => {
  for (const [method, path, answer] of [
    ['GET', '/b/7', '200'],
    ['GET', '/nope', '404'],
    ['DELETE', '/b/7', '404'],
    ['GET', '/a', '200'],
  ] as const) {
    for (let i = 0; i < 3; i++) {
      const before = finds;
      assert.ok((await call(method, path)).startsWith(answer));
      assert.ok(finds - before <= 1, `${method} ${path}: routed ${finds - before} times`);
    }
  }
});

/** node:http sends a path as given, a fragment too (fetch drops it). */
const callRaw = (path: string) =>
  new Promise<string>((resolve, reject) => {
    request(`${base}${path}`, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      res.on('end', () => resolve(`${res.statusCode} ${text}`));
    })
      .on('error', reject)
      .end();
  });

test('a percent-encoded parameter is decoded and a fragment dropped, as polka does', async () => {
  assert.is(
    await call('GET', '/b/x%20y?q=1'),
    `200 GET b ${JSON.stringify({ path: '/b/x%20y', search: '?q=1', params: { id: 'x y' }, url: '/b/x%20y?q=1' })}`,
  );
  assert.is(
    await call('GET', '/b/%E0%A4%A?q=1'),
    `200 GET b ${JSON.stringify({ path: '/b/%E0%A4%A', search: '?q=1', params: { id: '%E0%A4%A' }, url: '/b/%E0%A4%A?q=1' })}`,
  );
  assert.is(
    await callRaw('/b/7?q=1#top'),
    `200 GET b ${JSON.stringify({ path: '/b/7', search: '?q=1', params: { id: '7' }, url: '/b/7?q=1' })}`,
  );
  assert.is(
    await callRaw('/a#top?x'),
    `200 GET a ${JSON.stringify({ path: '/a', search: '', params: {}, url: '/a' })}`,
  );
});

test('past the remembered bound, requests still get polka’s answer', async () => {
  for (let i = 0; i < 300; i++) assert.is(await call('GET', `/any-x${i}`), `200 prefix /any-x${i}`);
  assert.is(await call('GET', '/a'), `200 GET a ${JSON.stringify({ path: '/a', search: '', params: {}, url: '/a' })}`);
});

test.run();
