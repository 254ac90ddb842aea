import { Redis } from 'ioredis';
import { SignJWT } from 'jose';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { runNode, type Started } from '../support/process.js';
import { redisBinary, startRedis, type RunningServer } from '../../harness/servers.js';
import { suiteWith } from '../support/suites.js';
import { eventually } from '../support/wait.js';

const TOKEN = 'logs-token-secret-value';
const base = {
  PORT: '0',
  HOST: '127.0.0.1',
  AUTH_TOKENS: JSON.stringify([{ token: TOKEN, owner: 'o', subject: 's', scopes: ['plants:read'] }]),
};
type Line = Record<string, unknown> & { msg: string };
const lines = (svc: Started): Line[] =>
  svc
    .stdout()
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as Line);
const portOf = async (svc: Started) =>
  Number((await svc.waitFor(/"msg":"listening"/), /"port":(\d+)/.exec(svc.stdout())?.[1]));

const test = suite('log lines that explain');

test('a refused token is logged at the default level in its request line, with the reason, never the token', async () => {
  const svc = runNode('bootstrap/main.js', base);
  try {
    const port = await portOf(svc);
    const wrong = 'not-the-right-token';
    await fetch(`http://127.0.0.1:${port}/plants`, {
      headers: { authorization: `Bearer ${wrong}`, 'x-request-id': 'req-1' },
    });
    await fetch(`http://127.0.0.1:${port}/plants`, {
      headers: { authorization: 'Basic abc', 'x-request-id': 'req-2' },
    });
    await fetch(`http://127.0.0.1:${port}/plants`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}`, 'x-request-id': 'req-3' },
    });
    await svc.waitFor(/"reqId":"req-3"[^\n]*"msg":"request"/);
    const rejected = lines(svc).filter((l) => l.msg === 'request' && l['rejected'] !== undefined);
    assert.equal(
      rejected.map((l) => [l['reqId'], l['rejected']]),
      [
        ['req-1', 'the token is unknown, expired or revoked'],
        ['req-2', 'the Authorization scheme is not Bearer'],
        ['req-3', 'the token lacks the scope plants:write'],
      ],
    );
    assert.not.match(svc.stdout(), new RegExp(`${wrong}|${TOKEN}`));
  } finally {
    svc.child.kill('SIGKILL');
    await svc.exited;
  }
});

test('a rejected JWT: the check that failed in the request line at the default level; expiry told to the client', async () => {
  const secret = 'a-jwt-secret-of-at-least-32-characters!!';
  const svc = runNode('bootstrap/main.js', {
    PORT: '0',
    HOST: '127.0.0.1',
    AUTH: 'jwt',
    JWT_SECRET: secret,
  });
  try {
    const port = await portOf(svc);
    const expired = await new SignJWT({ owner: 'o', scope: 'plants:read' })
      .setProtectedHeader({ alg: 'HS256' })
      .setSubject('s')
      .setExpirationTime(Math.floor(Date.now() / 1000) - 3600)
      .sign(new TextEncoder().encode(secret));
    const res = await fetch(`http://127.0.0.1:${port}/plants`, {
      headers: { authorization: `Bearer ${expired}`, 'x-request-id': 'jwt-1' },
    });
    assert.is(res.status, 401);
    assert.is(
      res.headers.get('www-authenticate'),
      'Bearer realm="plants", error="invalid_token", error_description="The access token expired"',
    );
    const [line] = await svc.waitFor(/\{[^\n]*"reqId":"jwt-1"[^\n]*"msg":"request"[^\n]*\}/);
    assert.is((JSON.parse(line) as Line)['rejected'], 'the token expired (exp)');
    assert.not.match(svc.stdout(), new RegExp(expired.split('.')[2] as string));
  } finally {
    svc.child.kill('SIGKILL');
    await svc.exited;
  }
});

test('the request line names the route template, never the id', async () => {
  const svc = runNode('bootstrap/main.js', base);
  try {
    const port = await portOf(svc);
    await fetch(`http://127.0.0.1:${port}/plants/918273645`, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${TOKEN}`, 'x-request-id': 'del-1' },
    });
    const [line] = await svc.waitFor(/\{[^\n]*"reqId":"del-1"[^\n]*\}/);
    const fields = JSON.parse(line) as Line;
    assert.is(fields['route'], 'DELETE /plants/{id}');
    assert.is(fields['status'], 403);
    assert.not.match(line, /918273645/);
  } finally {
    svc.child.kill('SIGKILL');
    await svc.exited;
  }
});

test('LOG_FORMAT=pretty writes human-readable lines with pino-pretty, and still stops in order', async () => {
  const svc = runNode('bootstrap/main.js', { ...base, LOG_FORMAT: 'pretty' });
  await svc.waitFor(/INFO[^\n]*: listening/);
  assert.not.match(svc.stdout(), /^\{/m, 'no JSON line');
  svc.child.kill('SIGTERM');
  assert.is(await svc.exited, 0);
  const out = svc.stdout();
  assert.ok(out.indexOf('stopping: finishing') < out.indexOf(': stopped'), out);
});

test.run();

const redisBin = redisBinary();
const outage = suiteWith(
  'a backend outage is logged once with the driver reason, and its end once',
  'skip' in redisBin
    ? redisBin
    : async () => {
        const redis = await startRedis(redisBin.bin);
        return { redis, teardown: () => redis.dispose() };
      },
);

const service = async (redis: RunningServer, url = redis.uri) => {
  const svc = runNode('bootstrap/main.js', {
    PORT: '0',
    HOST: '127.0.0.1',
    AUTH: 'redis',
    REDIS_URL: url,
    AUTH_TIMEOUT_MS: '1000',
  });
  const port = await portOf(svc);
  const get = async () =>
    (await fetch(`http://127.0.0.1:${port}/plants`, { headers: { authorization: 'Bearer some-token' } })).status;
  return { svc, get };
};

outage.test(
  'Redis stopped: one warning with the reason however many 503s; restarted: one recovery line',
  async (ctx) => {
    const { redis } = outage.subject(ctx);
    const { svc, get } = await service(redis);
    try {
      assert.is(await get(), 401);
      await redis.stop();
      for (let i = 0; i < 10; i++) assert.is(await get(), 503);
      await redis.start();
      await eventually('the token store answers again (401 for an unknown token)', async () => (await get()) === 401, {
        everyMs: 100,
      });
      await svc.waitFor(/"msg":"token store recovered"/);
      const outageLines = lines(svc).filter((l) => /^token store (unavailable|recovered)$/.test(l.msg));
      assert.equal(
        outageLines.map((l) => l.msg),
        ['token store unavailable', 'token store recovered'],
      );
      assert.match(String(outageLines[0]?.['reason']), /ECONNREFUSED|connection to Redis closed/);
      assert.is(outageLines[0]?.['level'], 40);
    } finally {
      svc.child.kill('SIGKILL');
      await svc.exited;
    }
  },
);

outage.test('a wrong Redis password is logged with the reason and never the password', async (ctx) => {
  const { redis } = outage.subject(ctx);
  const admin = new Redis(redis.uri);
  await admin.config('SET', 'requirepass', 'the-right-password');
  await admin.quit();
  const password = 'wrong-redis-password-7f3a';
  const { svc, get } = await service(redis, redis.uri.replace('redis://', `redis://:${password}@`));
  try {
    assert.is(await get(), 503);
    const [line] = await svc.waitFor(/\{[^\n]*"msg":"token store unavailable"[^\n]*\}/);
    assert.match(String((JSON.parse(line) as Line)['reason']), /AUTH|password/i);
    assert.not.match(svc.stdout() + svc.stderr(), new RegExp(password));
  } finally {
    svc.child.kill('SIGKILL');
    await svc.exited;
  }
});

outage.run();
