import { hash, timingSafeEqual } from 'node:crypto';
import * as E from 'fp-ts/lib/Either.js';
import * as O from 'fp-ts/lib/Option.js';
import * as TE from 'fp-ts/lib/TaskEither.js';
import type { TokenVerifier } from '../../../application/ports/token-verifier.js';
import type { Principal } from '../../../domain/principal.js';

export interface StaticToken {
  /** SHA-256 of the token secret; the secret itself is never kept. */
  readonly sha256: Buffer;
  readonly principal: Principal;
}

export const sha256 = (secret: string): Buffer => hash('sha256', secret, 'buffer');

/** A fixed token set (AUTH=static) keyed by SHA-256 (latin1, the cheapest key), compared in constant time. */
export const staticTokenVerifier = (tokens: readonly StaticToken[]): TokenVerifier => {
  const byHash = new Map<string, StaticToken>();
  for (const token of tokens) byHash.set(token.sha256.toString('latin1'), token);

  return {
    verify: (token) => () => {
      const presented = hash('sha256', token, 'binary'); // 'binary' is latin1
      const entry = byHash.get(presented);
      const found = entry !== undefined && timingSafeEqual(entry.sha256, Buffer.from(presented, 'latin1'));
      return Promise.resolve(E.right(found ? O.some(entry.principal) : O.none));
    },
    ping: TE.right(undefined),
  };
};
