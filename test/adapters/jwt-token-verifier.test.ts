import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import * as O from 'fp-ts/lib/Option.js';
import { exportJWK, exportSPKI, generateKeyPair, SignJWT, type JWTPayload } from 'jose';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { jwtTokenVerifier, type JwtOptions } from '../../adapters/tokens/jwt/jwt-token-verifier.js';
import { tokenVerifierContract } from '../contracts/token-verifier.contract.js';
import { freshOwner, left, right } from '../support/fixtures.js';

const SECRET = 'a-test-secret-of-at-least-thirty-two-characters';
const secretKey = new TextEncoder().encode(SECRET);
const base: Omit<JwtOptions, 'key'> = { ownerClaim: 'owner', clockToleranceSeconds: 5, timeoutMs: 2000 };
const now = () => Math.floor(Date.now() / 1000);

const sign = (claims: JWTPayload, key: Parameters<SignJWT['sign']>[0] = secretKey, alg = 'HS256', kid?: string) =>
  new SignJWT(claims).setProtectedHeader({ alg, ...(kid === undefined ? {} : { kid }) }).sign(key);

tokenVerifierContract('jwt', async () => {
  const verifier = await jwtTokenVerifier({ ...base, key: { kind: 'secret', secret: SECRET } });
  return {
    withPrincipals: async (principals) => ({
      verifier,
      tokens: await Promise.all(
        principals.map((p) =>
          sign({ sub: p.subject, owner: p.owner, scope: [...p.scopes].join(' '), exp: now() + 600 }),
        ),
      ),
    }),
    teardown: async () => {},
  };
});

const test = suite('JWT verifier');

test('HS256: sub, the owner claim and the scope claim make the principal', async () => {
  const verifier = await jwtTokenVerifier({ ...base, key: { kind: 'secret', secret: SECRET }, ownerClaim: 'tenant' });
  const owner = freshOwner();
  const found = await right(
    verifier.verify(await sign({ sub: 'ci', tenant: owner, scope: 'plants:read other:scope', exp: now() + 60 })),
  );
  assert.ok(O.isSome(found));
  assert.is(found.value.owner, owner);
  assert.is(found.value.subject, 'ci');
  assert.equal([...found.value.scopes], ['plants:read'], 'unknown scopes are dropped');
});

test('an expired token, a future nbf, a bad signature or a missing claim resolves to nothing', async () => {
  const verifier = await jwtTokenVerifier({ ...base, key: { kind: 'secret', secret: SECRET } });
  const good = { sub: 's', owner: 'o', scope: 'plants:read', exp: now() + 60 };
  const cases: Array<[string, Promise<string>]> = [
    ['expired', sign({ ...good, exp: now() - 60 })],
    ['not yet valid', sign({ ...good, nbf: now() + 60 })],
    ['other secret', sign(good, new TextEncoder().encode('another-secret-of-at-least-thirty-two-chars'))],
    ['no exp', sign({ sub: 's', owner: 'o' })],
    ['no sub', sign({ owner: 'o', exp: now() + 60 })],
    ['no owner', sign({ sub: 's', exp: now() + 60 })],
    ['owner not a string', sign({ ...good, owner: 7 })],
    ['scope neither a string nor an array of strings', sign({ ...good, scope: ['plants:read', 7] })],
    [
      'alg none',
      Promise.resolve(
        `${Buffer.from('{"alg":"none"}').toString('base64url')}.${Buffer.from(JSON.stringify(good)).toString('base64url')}.`,
      ),
    ],
    ['garbage', Promise.resolve('not.a.jwt')],
  ];
  for (const [label, token] of cases) assert.equal(await right(verifier.verify(await token)), O.none, label);
});

test('a scope claim given as an array of strings grants those scopes', async () => {
  const verifier = await jwtTokenVerifier({ ...base, key: { kind: 'secret', secret: SECRET } });
  const found = await right(
    verifier.verify(await sign({ sub: 's', owner: 'o', scope: ['plants:read', 'plants:write', 'x'], exp: now() + 60 })),
  );
  assert.ok(O.isSome(found));
  assert.equal([...found.value.scopes].sort(), ['plants:read', 'plants:write']);
});

test('a rejected token says which check failed (never the token); only expiry is told to the client', async () => {
  const verifier = await jwtTokenVerifier({
    ...base,
    key: { kind: 'secret', secret: SECRET },
    issuer: 'https://issuer.test/',
    audience: 'plants',
  });
  const good = { sub: 's', owner: 'o', iss: 'https://issuer.test/', aud: 'plants', exp: now() + 60 };
  const cases: Array<[JWTPayload, RegExp, string | undefined]> = [
    [{ ...good, exp: now() - 60 }, /^the token expired \(exp\)$/, 'The access token expired'],
    [{ ...good, aud: 'other' }, /^the aud claim failed/, undefined],
    [{ ...good, iss: 'https://elsewhere.test/' }, /^the iss claim failed/, undefined],
    [{ ...good, owner: 7 }, /^the owner claim "owner" is not/, undefined],
    [{ ...good, sub: '' }, /^the sub claim is not/, undefined],
    [{ ...good, scope: { read: true } }, /^the scope claim is neither/, undefined],
  ];
  for (const [claims, reason, description] of cases) {
    const token = await sign(claims);
    const seen: Array<{ reason: string; description?: string }> = [];
    assert.equal(await right(verifier.verify(token, (why) => seen.push(why))), O.none, reason.source);
    assert.is(seen.length, 1, reason.source);
    assert.match(seen[0]?.reason ?? '', reason);
    assert.is(seen[0]?.description, description, reason.source);
    assert.not.ok(seen[0]?.reason.includes(token), 'never the token');
  }
  const bad: Array<{ reason: string }> = [];
  await right(verifier.verify(await sign(good, new TextEncoder().encode('x'.repeat(40))), (why) => bad.push(why)));
  assert.match(bad[0]?.reason ?? '', /^ERR_JWS_SIGNATURE_VERIFICATION_FAILED/);
});

test('the clock tolerance admits a token expired by less than the skew', async () => {
  const verifier = await jwtTokenVerifier({ ...base, key: { kind: 'secret', secret: SECRET } });
  assert.ok(O.isSome(await right(verifier.verify(await sign({ sub: 's', owner: 'o', exp: now() - 2 })))));
});

test('iss and aud are checked when configured', async () => {
  const verifier = await jwtTokenVerifier({
    ...base,
    key: { kind: 'secret', secret: SECRET },
    issuer: 'https://issuer.test/',
    audience: 'plant-store',
  });
  const claims = { sub: 's', owner: 'o', exp: now() + 60 };
  assert.ok(
    O.isSome(await right(verifier.verify(await sign({ ...claims, iss: 'https://issuer.test/', aud: 'plant-store' })))),
  );
  assert.equal(
    await right(verifier.verify(await sign({ ...claims, iss: 'https://evil.test/', aud: 'plant-store' }))),
    O.none,
  );
  assert.equal(
    await right(verifier.verify(await sign({ ...claims, iss: 'https://issuer.test/', aud: 'other' }))),
    O.none,
  );
  assert.equal(await right(verifier.verify(await sign(claims))), O.none, 'missing iss and aud');
});

test('RS256 and ES256 public keys verify their own signatures only', async () => {
  for (const alg of ['RS256', 'ES256'] as const) {
    const { publicKey, privateKey } = await generateKeyPair(alg);
    const verifier = await jwtTokenVerifier({
      ...base,
      key: { kind: 'public-key', pem: await exportSPKI(publicKey), algorithm: alg },
    });
    const claims = { sub: 's', owner: 'o', scope: 'plants:write', exp: now() + 60 };
    assert.ok(O.isSome(await right(verifier.verify(await sign(claims, privateKey, alg)))), alg);
    const other = await generateKeyPair(alg);
    assert.equal(await right(verifier.verify(await sign(claims, other.privateKey, alg))), O.none, `${alg} other key`);
    assert.equal(await right(verifier.verify(await sign(claims))), O.none, `${alg} refuses HS256`);
  }
});

test('JWKS: keys are fetched from the URL; an unreachable JWKS is AuthUnavailable, not 401', async () => {
  const { publicKey, privateKey } = await generateKeyPair('ES256');
  const jwk = { ...(await exportJWK(publicKey)), kid: 'k1', alg: 'ES256', use: 'sig' };
  let up = true;
  const server: Server = createServer((_req, res) => {
    if (!up) return res.socket?.destroy();
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ keys: [jwk] }));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/jwks.json`;
  try {
    const verifier = await jwtTokenVerifier({ ...base, key: { kind: 'jwks', url } });
    const token = await sign({ sub: 's', owner: 'o', exp: now() + 60 }, privateKey, 'ES256', 'k1');
    assert.ok(O.isSome(await right(verifier.verify(token))));
    assert.is(await right(verifier.ping), undefined);
    up = false;
    const fresh = await jwtTokenVerifier({ ...base, key: { kind: 'jwks', url } });
    assert.equal(await left(fresh.verify(token)), { _tag: 'AuthUnavailable' });
    assert.equal(await left(fresh.ping), { _tag: 'AuthUnavailable' });
  } finally {
    server.closeAllConnections();
    server.close();
  }
});

test.run();
