import { randomBytes } from 'node:crypto';
import * as O from 'fp-ts/lib/Option.js';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { sha256, staticTokenVerifier } from '../../adapters/tokens/static/static-token-verifier.js';
import { tokenVerifierContract } from '../contracts/token-verifier.contract.js';
import { principal, right } from '../support/fixtures.js';

tokenVerifierContract('static', async () => ({
  withPrincipals: async (principals) => {
    const tokens = principals.map(() => randomBytes(24).toString('base64url'));
    const verifier = staticTokenVerifier(
      principals.map((p, i) => ({ sha256: sha256(tokens[i] as string), principal: p })),
    );
    return { verifier, tokens };
  },
  teardown: async () => {},
}));

const test = suite('static token set');

test('a token given by its sha256 hex resolves like a plain one', async () => {
  const token = 'given-as-hash';
  const p = principal();
  const verifier = staticTokenVerifier([{ sha256: Buffer.from(sha256(token).toString('hex'), 'hex'), principal: p }]);
  assert.equal(await right(verifier.verify(token)), O.some(p));
});

test.run();
