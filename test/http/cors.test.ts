import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { corsPolicy } from '../../adapters/http/server/cors.js';
import { memoryRateLimiter } from '../../adapters/rate-limit/memory/memory-rate-limiter.js';
import { rawRequest, serviceSuite, startService } from '../support/http.js';
import { runNode } from '../support/process.js';

const APP = 'https://app.example';
const OTHER = 'https://evil.example';
const preflightOf = (origin: string, method: string) => ({
  origin,
  'access-control-request-method': method,
  'access-control-request-headers': 'authorization, content-type',
});
const corsFields = (headers: Headers) => [...headers.keys()].filter((name) => name.startsWith('access-control-'));

const off = serviceSuite('CORS off (CORS_ORIGINS unset)');

off.test('no CORS field on any response, and OPTIONS stays 405', async ({ svc }) => {
  const res = await svc.call('GET', '/plants', { token: svc.token.alice, headers: { origin: APP } });
  assert.is(res.status, 200);
  assert.equal(corsFields(res.headers), []);
  assert.is(res.headers.get('vary'), null);
  const preflight = await svc.call('OPTIONS', '/plants', { headers: preflightOf(APP, 'POST') });
  assert.is(preflight.status, 405);
  assert.equal(corsFields(preflight.headers), []);
});

off.run();

const listed = serviceSuite('CORS for a list of origins', {
  cors: corsPolicy([APP]),
  limiter: memoryRateLimiter({ max: 1000, windowMs: 60_000 }),
});

listed.test(
  'a preflight from an allowed origin is 204 without a token, with the methods and headers of the API',
  async ({ svc }) => {
    const res = await svc.call('OPTIONS', '/plants/7', { headers: preflightOf(APP, 'DELETE') });
    assert.is(res.status, 204);
    assert.is(res.headers.get('access-control-allow-origin'), APP);
    assert.is(res.headers.get('access-control-allow-methods'), 'DELETE');
    assert.is(res.headers.get('access-control-allow-headers'), 'Authorization, Content-Type, X-Request-Id');
    assert.is(res.headers.get('access-control-max-age'), '600');
    assert.is(res.headers.get('vary'), 'Origin');
    const plants = await svc.call('OPTIONS', '/plants', { headers: preflightOf(APP, 'POST') });
    assert.is(plants.headers.get('access-control-allow-methods'), 'GET, HEAD, POST');
  },
);

listed.test('a preflight from another origin gets no CORS field and stays 405', async ({ svc }) => {
  const res = await svc.call('OPTIONS', '/plants', { headers: preflightOf(OTHER, 'POST') });
  assert.is(res.status, 405);
  assert.equal(corsFields(res.headers), []);
  assert.is(res.headers.get('vary'), 'Origin');
});

listed.test('an OPTIONS that is not a preflight is 405 as before', async ({ svc }) => {
  assert.is((await svc.call('OPTIONS', '/plants', { headers: { origin: APP } })).status, 405);
});

listed.test(
  'a response to an allowed origin exposes Link, X-Request-Id, Retry-After and RateLimit-*',
  async ({ svc }) => {
    for (let id = 1; id <= 3; id++) {
      await svc.call('POST', '/plants', { token: svc.token.alice, body: JSON.stringify({ id, name: 'Fern' }) });
    }
    const res = await svc.call('GET', '/plants?limit=1', { token: svc.token.alice, headers: { origin: APP } });
    assert.is(res.status, 200);
    assert.ok(res.headers.get('link') !== null);
    assert.is(res.headers.get('access-control-allow-origin'), APP);
    assert.is(res.headers.get('vary'), 'Origin');
    const exposed = (res.headers.get('access-control-expose-headers') ?? '').split(', ');
    for (const name of [
      'Link',
      'X-Request-Id',
      'Retry-After',
      'RateLimit-Limit',
      'RateLimit-Remaining',
      'RateLimit-Reset',
    ]) {
      assert.ok(exposed.includes(name), `${name} is exposed`);
    }
  },
);

listed.test('an error answered to an allowed origin is readable by it too', async ({ svc }) => {
  const res = await svc.call('GET', '/plants', { headers: { origin: APP } });
  assert.is(res.status, 401);
  assert.is(res.headers.get('access-control-allow-origin'), APP);
});

listed.test('a response to another origin carries no CORS field, only Vary: Origin', async ({ svc }) => {
  const res = await svc.call('GET', '/plants', { token: svc.token.alice, headers: { origin: OTHER } });
  assert.is(res.status, 200);
  assert.equal(corsFields(res.headers), []);
  assert.is(res.headers.get('vary'), 'Origin');
});

listed.run();

const any = serviceSuite('CORS for any origin (CORS_ORIGINS=*)', { cors: corsPolicy('*') });

any.test('every origin is allowed with *', async ({ svc }) => {
  const preflight = await svc.call('OPTIONS', '/plants', { headers: preflightOf(OTHER, 'GET') });
  assert.is(preflight.status, 204);
  assert.is(preflight.headers.get('access-control-allow-origin'), '*');
  const res = await svc.call('GET', '/healthz', { headers: { origin: OTHER } });
  assert.is(res.headers.get('access-control-allow-origin'), '*');
});

any.test(
  'a docs file, cached public, says Vary: Origin: its CORS fields depend on the request having one',
  async ({ svc }) => {
    const without = await svc.call('GET', '/docs/swagger-ui.css');
    assert.is(without.headers.get('cache-control'), 'public, max-age=3600');
    assert.is(without.headers.get('access-control-allow-origin'), null);
    assert.is(without.headers.get('vary'), 'Origin');
    const cross = await svc.call('GET', '/docs/swagger-ui.css', { headers: { origin: OTHER } });
    assert.is(cross.headers.get('access-control-allow-origin'), '*');
    assert.is(cross.headers.get('vary'), 'Origin');
  },
);

any.run();

const below = suite('CORS on answers written below the app (parser errors, timeouts)');

below(
  'a 400 for a broken body, a 408 for one that does not arrive, carry the CORS fields of their origin',
  async () => {
    const svc = await startService({ cors: corsPolicy([APP]) }, { requestTimeoutMs: 300, headersTimeoutMs: 300 });
    try {
      const head = (extra: string) =>
        `POST /plants HTTP/1.1\r\nHost: x\r\nOrigin: ${APP}\r\nAuthorization: Bearer ${svc.token.alice}\r\n` +
        `Content-Type: application/json\r\n${extra}\r\n`;
      const broken = await rawRequest(svc.port, [head('Transfer-Encoding: chunked\r\n') + 'zz\r\n']);
      const late = await rawRequest(svc.port, [head('Content-Length: 50\r\n') + '{"id":']);
      for (const [res, status] of [
        [broken, 400],
        [late, 408],
      ] as const) {
        assert.is(res.status, status);
        assert.is(res.headers['access-control-allow-origin'], APP, `${status}`);
        assert.match(res.headers['vary'] ?? '', /Origin/, `${status}`);
        assert.match(res.headers['access-control-expose-headers'] ?? '', /X-Request-Id/, `${status}`);
      }
    } finally {
      await svc.close();
    }
  },
);

below('an answer written before any request was read (431) says Vary: Origin', async () => {
  const svc = await startService({ cors: corsPolicy([APP]) }, { maxHeaderSize: 1024 });
  try {
    const res = await rawRequest(svc.port, [
      `GET /plants HTTP/1.1\r\nHost: x\r\nOrigin: ${APP}\r\nX-Big: ${'a'.repeat(2000)}\r\n\r\n`,
    ]);
    assert.is(res.status, 431);
    assert.match(res.headers['vary'] ?? '', /Origin/);
  } finally {
    await svc.close();
  }
});

below.run();

const processSuite = suite('CORS_ORIGINS in the real process');

processSuite('CORS_ORIGINS configures the process', async () => {
  const svc = runNode('bootstrap/main.js', {
    PORT: '0',
    HOST: '127.0.0.1',
    CORS_ORIGINS: `${APP}, http://localhost:5173`,
    AUTH_TOKENS: '[{"token":"t","owner":"o","subject":"s","scopes":[]}]',
  });
  try {
    const [, port] = await svc.waitFor(/"port":(\d+)/);
    const res = await fetch(`http://127.0.0.1:${port}/plants`, { method: 'OPTIONS', headers: preflightOf(APP, 'GET') });
    assert.is(res.status, 204);
    assert.is(res.headers.get('access-control-allow-origin'), APP);
  } finally {
    svc.child.kill('SIGKILL');
    await svc.exited;
  }
});

processSuite.run();
