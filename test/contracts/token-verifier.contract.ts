import * as O from 'fp-ts/lib/Option.js';
import * as assert from 'uvu/assert';
import type { TokenVerifier } from '../../application/ports/token-verifier.js';
import type { Principal } from '../../domain/principal.js';
import { freshOwner, principal, right } from '../support/fixtures.js';
import { suiteWith, type Setup } from '../support/suites.js';

export interface TokenStoreUnderTest {
  /** A verifier that knows a token for each of these principals, and those tokens, in order. */
  readonly withPrincipals: (principals: readonly Principal[]) => Promise<{ verifier: TokenVerifier; tokens: string[] }>;
  readonly teardown: () => Promise<void>;
}

export type TokenStoreSetup = Setup<TokenStoreUnderTest>;

const sameParts = (p: Principal) => ({ subject: p.subject, owner: p.owner, scopes: [...p.scopes].sort() });

/** The token port's contract: every TokenVerifier adapter runs this same suite. */
export const tokenVerifierContract = (adapter: string, setup: TokenStoreSetup): void => {
  const { test, subject: store, run } = suiteWith(`TokenVerifier contract [${adapter}]`, setup);

  test('each token resolves to its own principal: subject, owner and scopes', async (ctx) => {
    const people = [
      principal(freshOwner('a')),
      principal(freshOwner('b'), ['plants:read']),
      principal(freshOwner('c'), ['plants:write']),
    ];
    const { verifier, tokens } = await store(ctx).withPrincipals(people);
    for (const [i, p] of people.entries()) {
      const found = await right(verifier.verify(tokens[i] as string));
      assert.ok(O.isSome(found), `token ${i} resolves`);
      assert.equal(sameParts(found.value), sameParts(p));
    }
  });

  test('a principal with no scopes resolves with none', async (ctx) => {
    const nobody = principal(freshOwner(), []);
    const { verifier, tokens } = await store(ctx).withPrincipals([nobody]);
    const found = await right(verifier.verify(tokens[0] as string));
    assert.ok(O.isSome(found));
    assert.is(found.value.scopes.size, 0);
  });

  test('an unknown token, or a known one changed by one character, resolves to nothing', async (ctx) => {
    const { verifier, tokens } = await store(ctx).withPrincipals([principal()]);
    const token = tokens[0] as string;
    // A middle character: every bit of it counts (the last base64url character of a signature may carry padding bits).
    const middle = Math.floor(token.length / 2);
    const changed = token.slice(0, middle) + (token[middle] === 'A' ? 'B' : 'A') + token.slice(middle + 1);
    assert.equal(await right(verifier.verify(changed)), O.none);
    assert.equal(await right(verifier.verify(token + 'x')), O.none);
    assert.equal(await right(verifier.verify('never-issued-token')), O.none);
  });

  test('ping succeeds while the store answers', async (ctx) => {
    const { verifier } = await store(ctx).withPrincipals([]);
    assert.is(await right(verifier.ping), undefined);
  });

  run();
};
