import * as assert from 'uvu/assert';
import { TOKEN_MAX } from '../../domain/principal.js';
import { sha256, staticTokenVerifier } from '../../adapters/tokens/static/static-token-verifier.js';
import type { Owner } from '../../domain/plant.js';
import { freshOwner } from '../support/fixtures.js';
import { serviceSuite } from '../support/http.js';

/**
 * RFC 6750 §2.1: `Bearer` 1*SP b64token. A token of the maximum length (4096) after several spaces is a token, not
 * a malformed header: the length bound applies to the token, not to the header around it.
 */
const longest = 'A1-._~+/'.repeat(TOKEN_MAX / 8 - 1) + 'abcdefg=';
const owner: Owner = freshOwner('bearer');
const { test, run } = serviceSuite('edge: Bearer with 1*SP and the longest token', {
  tokens: staticTokenVerifier([
    { sha256: sha256(longest), principal: { owner, subject: 'long', scopes: new Set(['plants:read']) } },
  ]),
});

const REALM = 'Bearer realm="plants"';

test(`a ${TOKEN_MAX}-character token after one space or after many is accepted`, async ({ svc }) => {
  assert.is(longest.length, TOKEN_MAX);
  for (const spaces of [1, 2, 17, 200, 4000]) {
    const res = await svc.call('GET', '/plants', {
      headers: { authorization: `Bearer${' '.repeat(spaces)}${longest}` },
    });
    assert.is(res.status, 200, `${spaces} spaces`);
  }
  const mixedCase = await svc.call('GET', '/plants', { headers: { authorization: `bEARER    ${longest}` } });
  assert.is(mixedCase.status, 200);
});

test('one character more than the maximum is malformed, whatever the spaces', async ({ svc }) => {
  for (const spaces of [1, 30]) {
    const res = await svc.call('GET', '/plants', {
      headers: { authorization: `Bearer${' '.repeat(spaces)}${longest}a` },
    });
    assert.is(res.status, 401);
    assert.is(res.headers.get('www-authenticate'), REALM, 'malformed, not merely unknown');
  }
});

test('a well-formed unknown token after many spaces is unknown (invalid_token), not malformed', async ({ svc }) => {
  const res = await svc.call('GET', '/plants', {
    headers: { authorization: `Bearer${' '.repeat(50)}${'b'.repeat(TOKEN_MAX)}` },
  });
  assert.is(res.status, 401);
  assert.is(res.headers.get('www-authenticate'), `${REALM}, error="invalid_token"`);
});

run();
