import * as O from 'fp-ts/lib/Option.js';
import { exportJWK, generateKeyPair, SignJWT, type JWTPayload } from 'jose';
import * as assert from 'uvu/assert';
import { jwtTokenVerifier, type JwtOptions } from '../../adapters/tokens/jwt/jwt-token-verifier.js';
import { freshOwner, left, right } from '../support/fixtures.js';
import { startService } from '../support/http.js';
import { runNode } from '../support/process.js';
import { startJwksServer, type JwksAnswer, type JwksServer } from '../support/jwks-server.js';
import { suiteWith } from '../support/suites.js';
import { eventually, sleep } from '../support/wait.js';
import { openWire } from '../edge/wire.js';
import { connectBackends } from '../../bootstrap/backends.js';
import { loadConfig } from '../../bootstrap/config.js';
import { backendBreakers } from '../../application/fail-fast/breakers.js';
import { timedTokens, tokenStoreGuard } from '../../application/fail-fast/guards.js';

/**
 * AUTH=jwt with a JWKS URL whose answers the test controls. A key source that cannot answer with a key set (an error
 * status, HTML, JSON that is not a key set, a hang past the timeout, a closed connection) is an outage: 503, never a
 * 401 for a good token, also when cached keys must be refreshed. Only a token that is itself bad is a 401.
 */
const TIMEOUT_MS = 300;
const OUTAGES: readonly JwksAnswer[] = ['status-500', 'html', 'not-a-key-set', 'hang', 'close', 'redirect'];
const now = () => Math.floor(Date.now() / 1000);

interface Subject {
  readonly jwks: JwksServer;
  readonly sign: (claims: JWTPayload, kid?: string) => Promise<string>;
  readonly signWithOtherKey: (claims: JWTPayload) => Promise<string>;
  readonly verifier: (extra?: Partial<JwtOptions>) => ReturnType<typeof jwtTokenVerifier>;
  readonly teardown: () => Promise<void>;
}

const { test, subject, run } = suiteWith<Subject>('AUTH=jwt when the JWKS URL fails', async () => {
  const { publicKey, privateKey } = await generateKeyPair('ES256');
  const other = await generateKeyPair('ES256');
  const jwk = { ...(await exportJWK(publicKey)), kid: 'k1', alg: 'ES256', use: 'sig' };
  const jwks = await startJwksServer([jwk]);
  return {
    jwks,
    sign: (claims, kid = 'k1') => new SignJWT(claims).setProtectedHeader({ alg: 'ES256', kid }).sign(privateKey),
    signWithOtherKey: (claims) =>
      new SignJWT(claims).setProtectedHeader({ alg: 'ES256', kid: 'k1' }).sign(other.privateKey),
    verifier: (extra = {}) =>
      jwtTokenVerifier({
        key: { kind: 'jwks', url: jwks.url },
        ownerClaim: 'owner',
        clockToleranceSeconds: 0,
        timeoutMs: TIMEOUT_MS,
        ...extra,
      }),
    teardown: () => jwks.close(),
  };
});

const good = () => ({ sub: 'ci', owner: freshOwner(), scope: 'plants:read', exp: now() + 600 });

test('a fresh verifier whose JWKS URL fails in any way: a good token is unavailable (503), never unknown; ping fails', async (ctx) => {
  const { jwks, sign, verifier } = subject(ctx);
  const token = await sign(good());
  try {
    for (const outage of OUTAGES) {
      jwks.answer(outage);
      const v = await verifier();
      assert.equal(await left(v.verify(token)), { _tag: 'AuthUnavailable' }, `verify, JWKS ${outage}`);
      assert.equal(await left(v.ping), { _tag: 'AuthUnavailable' }, `ping, JWKS ${outage}`);
    }
    jwks.answer('keys');
    const v = await verifier();
    assert.ok(O.isSome(await right(v.verify(token))));
    assert.is(await right(v.ping), undefined);
  } finally {
    jwks.answer('keys');
  }
});

test('keys cached, then due for a refresh while the JWKS URL fails: unavailable, not 401; once it answers: served', async (ctx) => {
  const { jwks, sign, verifier } = subject(ctx);
  const cacheMaxAgeMs = 100;
  const v = await verifier({ jwksCacheMaxAgeMs: cacheMaxAgeMs });
  const token = await sign(good());
  try {
    assert.ok(O.isSome(await right(v.verify(token))), 'keys fetched and cached');
    for (const outage of OUTAGES) {
      jwks.answer(outage);
      // Time is what is under test: the cached keys become too old to use. A lower bound: it cannot come early.
      await sleep(cacheMaxAgeMs + 20);
      assert.equal(await left(v.verify(token)), { _tag: 'AuthUnavailable' }, `JWKS ${outage}`);
    }
    jwks.answer('keys');
    assert.ok(O.isSome(await right(v.verify(token))), 'refreshed once the JWKS URL answers');
  } finally {
    jwks.answer('keys');
  }
});

test('an unknown kid: 401 when the key set answers without it, 503 when the key set cannot be fetched', async (ctx) => {
  const { jwks, sign, verifier } = subject(ctx);
  const v = await verifier({ jwksCooldownMs: 0 }); // every unknown kid asks the JWKS URL again
  const known = await sign(good());
  const unknown = await sign(good(), 'rotated-in');
  try {
    assert.ok(O.isSome(await right(v.verify(known))));
    assert.equal(await right(v.verify(unknown)), O.none, 'the key set was fetched and has no such kid');
    jwks.answer('status-500');
    assert.equal(
      await left(v.verify(unknown)),
      { _tag: 'AuthUnavailable' },
      'the kid may be a key rotated in that could not be fetched',
    );
  } finally {
    jwks.answer('keys');
  }
});

test('a token that is itself bad is still 401 while the JWKS URL fails, when the cached keys can judge it', async (ctx) => {
  const { jwks, sign, signWithOtherKey, verifier } = subject(ctx);
  const v = await verifier();
  assert.ok(O.isSome(await right(v.verify(await sign(good())))), 'keys cached');
  try {
    jwks.answer('status-500');
    assert.equal(await right(v.verify(await sign({ ...good(), exp: now() - 60 }))), O.none, 'expired');
    assert.equal(await right(v.verify(await signWithOtherKey(good()))), O.none, 'bad signature');
    assert.equal(await right(v.verify('not.a.jwt')), O.none, 'malformed');
    assert.ok(O.isSome(await right(v.verify(await sign(good())))), 'a good token is served from the cached keys');
  } finally {
    jwks.answer('keys');
  }
});

test('over HTTP: a good token while the JWKS URL answers 500 is a 503 with Retry-After, and /readyz names the token store', async (ctx) => {
  const { jwks, sign, verifier } = subject(ctx);
  const svc = await startService({ tokens: await verifier() });
  try {
    jwks.answer('status-500');
    const res = await svc.call('GET', '/plants', { token: await sign(good()) });
    assert.is(res.status, 503);
    assert.is(res.headers.get('retry-after'), '1');
    assert.is(res.headers.get('www-authenticate'), null);
    const ready = await svc.call('GET', '/readyz');
    assert.is(ready.status, 503);
    assert.is((ready.json() as { message: string }).message, 'not ready: token store does not answer');
  } finally {
    jwks.answer('keys');
    await svc.close();
  }
});

test('over HTTP: 200 back-to-back /readyz on one connection fetch the JWKS once a second at most (a reused answer)', async (ctx) => {
  const { jwks, verifier } = subject(ctx);
  const svc = await startService({ tokens: await verifier() });
  const wire = await openWire(svc.port);
  try {
    const before = jwks.requests();
    const started = performance.now();
    for (let n = 1; n <= 200; n++) {
      wire.write('GET /readyz HTTP/1.1\r\nHost: x\r\n\r\n');
      assert.is((await wire.response(n)).status, 200);
    }
    // One fetch per READINESS_REUSE_MS (1 s) at most: the 200 took this many windows.
    const windows = Math.ceil((performance.now() - started) / 1000);
    assert.ok(jwks.requests() - before <= windows, `${jwks.requests() - before} fetches in ${windows} s`);
  } finally {
    wire.destroy();
    await svc.close();
  }
});

test('the outage log line says how the JWKS URL failed (its status, not JSON, no key set, a timeout), not just "no answer"', async (ctx) => {
  const { jwks } = subject(ctx);
  const config = loadConfig({ AUTH: 'jwt', JWT_JWKS_URL: jwks.url, AUTH_TIMEOUT_MS: String(TIMEOUT_MS) });
  const reasons: string[] = [];
  const quiet = { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} };
  const backends = await connectBackends(config, quiet, {
    driverError: (backend, reason) => reasons.push(`${backend}: ${reason}`),
  });
  const expected: Record<string, RegExp> = {
    'status-500': /answered 500/,
    html: /did not answer JSON/,
    'not-a-key-set': /did not answer a JSON Web Key Set/,
    hang: /did not answer: TimeoutError/,
    close: /did not answer: /,
    redirect: /answered 302/,
  };
  try {
    for (const outage of OUTAGES) {
      jwks.answer(outage);
      reasons.length = 0;
      assert.equal(await left(backends.tokens.ping), { _tag: 'AuthUnavailable' }, outage);
      assert.ok(
        reasons.some((r) => r.startsWith('token store: the JWKS URL ') && (expected[outage] as RegExp).test(r)),
        `${outage}: ${reasons.join(' | ')}`,
      );
    }
  } finally {
    jwks.answer('keys');
    await backends.close();
  }
});

/**
 * The service over a verifier wired as bootstrap/main.ts wires AUTH=jwt: the key fetches guarded by the token store's
 * breaker, verify only timed. No cooldown: every unknown kid asks for the key set, the harshest an attacker can get
 * past jose's default of 30 s.
 */
const guardedService = async (verifier: Subject['verifier']) => {
  const quiet = { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} };
  const failFast = { breakers: backendBreakers({ logger: quiet }), metrics: undefined };
  // A generous bound: the outages here are answered (500), and a loaded machine must not turn a fetch into one.
  const tokens = await verifier({ timeoutMs: 10_000, jwksCooldownMs: 0, keyFetches: tokenStoreGuard(failFast) });
  return startService({ tokens: timedTokens(tokens, undefined) });
};

test('over HTTP, the key server down: a tenant with a cached key keeps its 200s while junk kids arrive 40 a second, each a 503, fetched at most once a second', async (ctx) => {
  const { jwks, sign, verifier } = subject(ctx);
  const svc = await guardedService(verifier);
  const tenant = await sign(good());
  try {
    assert.is((await svc.call('GET', '/plants', { token: tenant })).status, 200, 'key fetched and cached');
    jwks.answer('status-500');
    const fetchesBefore = jwks.requests();
    const outage = performance.now();
    const junk: Array<Promise<number>> = [];
    const attack = (async () => {
      for (let n = 0; n < 120; n++) {
        junk.push(sign(good(), `junk-${n}`).then(async (t) => (await svc.call('GET', '/plants', { token: t })).status));
        await sleep(25); // paces the attack: 40 a second, for 3 s
      }
    })();
    const statuses: number[] = [];
    let attacking = true;
    void attack.then(() => (attacking = false));
    while (attacking) {
      statuses.push((await svc.call('GET', '/plants', { token: tenant })).status);
      await sleep(50); // paces the tenant: about 20 a second
    }
    const junkStatuses = await Promise.all(junk);
    const fetches = jwks.requests() - fetchesBefore;
    const seconds = (performance.now() - outage) / 1000;
    const ok = statuses.filter((s) => s === 200).length;
    assert.ok(ok >= 0.95 * statuses.length, `tenant: ${ok} of ${statuses.length} were 200`);
    assert.ok(
      junkStatuses.every((s) => s === 503),
      'a kid whose key set cannot be fetched is 503, never 401',
    );
    // The failed fetch that opened the breaker, then one probe a second at most.
    assert.ok(fetches <= 1 + Math.ceil(seconds), `${fetches} key fetches in ${seconds.toFixed(1)} s`);
  } finally {
    jwks.answer('keys');
    await svc.close();
  }
});

test('over HTTP, after a key-server outage: a key rotated in meanwhile is served within seconds of its return; a kid still absent is a 401', async (ctx) => {
  const { jwks, sign, verifier } = subject(ctx);
  const svc = await guardedService(verifier);
  const keys = jwks.keys();
  const { publicKey, privateKey } = await generateKeyPair('ES256');
  const rotated = await new SignJWT(good()).setProtectedHeader({ alg: 'ES256', kid: 'k2' }).sign(privateKey);
  try {
    assert.is((await svc.call('GET', '/plants', { token: await sign(good()) })).status, 200, 'key set fetched');
    jwks.answer('status-500');
    assert.is((await svc.call('GET', '/plants', { token: rotated })).status, 503, 'the key server is known down');
    jwks.setKeys([...keys, { ...(await exportJWK(publicKey)), kid: 'k2', alg: 'ES256', use: 'sig' }]);
    jwks.answer('keys');
    await eventually(
      'a token of the new key is served',
      async () => (await svc.call('GET', '/plants', { token: rotated })).status === 200,
      { timeoutMs: 5000, everyMs: 50 },
    );
    const absent = await svc.call('GET', '/plants', { token: await sign(good(), 'never-issued') });
    assert.is(absent.status, 401, 'absent from a key set fetched fine');
  } finally {
    jwks.setKeys(keys);
    jwks.answer('keys');
    await svc.close();
  }
});

test('the service process, AUTH=jwt: while the key server is known down (a failed /readyz), every request whose key is cached is served', async (ctx) => {
  const { jwks, sign } = subject(ctx);
  const svc = runNode('bootstrap/main.js', {
    PORT: '0',
    HOST: '127.0.0.1',
    AUTH: 'jwt',
    JWT_JWKS_URL: jwks.url,
    // A generous bound: a fresh process's first fetch on a loaded machine may take longer than this suite's 300 ms.
    AUTH_TIMEOUT_MS: '10000',
  });
  try {
    const base = `http://127.0.0.1:${(await svc.waitFor(/"port":(\d+)/))[1]}`;
    const plants = (token: string) => fetch(`${base}/plants`, { headers: { authorization: `Bearer ${token}` } });
    const tenant = await sign(good());
    assert.is((await plants(tenant)).status, 200, 'key fetched and cached');
    jwks.answer('status-500');
    assert.is((await fetch(`${base}/readyz`)).status, 503, 'the key server is known down');
    const statuses = await Promise.all(Array.from({ length: 20 }, async () => (await plants(tenant)).status));
    assert.equal(statuses, Array<number>(20).fill(200));
  } finally {
    jwks.answer('keys');
    svc.child.kill('SIGKILL');
    await svc.exited;
  }
});

run();
