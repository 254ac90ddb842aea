import * as E from 'fp-ts/lib/Either.js';
import * as O from 'fp-ts/lib/Option.js';
import * as TE from 'fp-ts/lib/TaskEither.js';
import { createRemoteJWKSet, errors, importSPKI, jwtVerify, type JWTVerifyGetKey, type JWTPayload } from 'jose';
import { tokenStoreUnavailable } from '../../../application/errors.js';
import type { Logger } from '../../../application/ports/logger.js';
import type { TokenVerifier } from '../../../application/ports/token-verifier.js';
import { Owner } from '../../../domain/plant.js';
import { isScope, type Principal, type Scope } from '../../../domain/principal.js';

export type JwtKey =
  | { readonly kind: 'secret'; readonly secret: string }
  | { readonly kind: 'public-key'; readonly pem: string; readonly algorithm: 'RS256' | 'ES256' }
  | { readonly kind: 'jwks'; readonly url: string };

export interface JwtOptions {
  readonly key: JwtKey;
  readonly issuer?: string;
  readonly audience?: string;
  /** The claim that names the principal's owner. */
  readonly ownerClaim: string;
  readonly clockToleranceSeconds: number;
  /** Bound on fetching the JWKS. */
  readonly timeoutMs: number;
  /** Where a rejected token's reason goes (debug): the check that failed, never the token. */
  readonly logger?: Pick<Logger, 'debug'>;
}

/**
 * Signed JWTs (AUTH=jwt), verified with jose: HS256 with a shared secret, RS256/ES256 with a public key, or keys from
 * a JWKS URL. `exp` and `sub` are required, and the owner claim; `nbf` is honoured; `iss` and `aud` are checked when
 * configured. Scopes come from the space-separated `scope` claim (absent: none). A token that fails any check
 * resolves to nothing (401); a JWKS that cannot be fetched in time is TokenStoreUnavailable (503).
 */
export const jwtTokenVerifier = async (options: JwtOptions): Promise<TokenVerifier> => {
  const { key } = options;
  let getKey: JWTVerifyGetKey | Uint8Array | Awaited<ReturnType<typeof importSPKI>>;
  let algorithms: string[];
  switch (key.kind) {
    case 'secret':
      getKey = new TextEncoder().encode(key.secret);
      algorithms = ['HS256'];
      break;
    case 'public-key':
      getKey = await importSPKI(key.pem, key.algorithm);
      algorithms = [key.algorithm];
      break;
    case 'jwks':
      getKey = createRemoteJWKSet(new URL(key.url), { timeoutDuration: options.timeoutMs });
      algorithms = ['RS256', 'ES256'];
      break;
  }

  const principalOf = (payload: JWTPayload): Principal | undefined => {
    const owner = payload[options.ownerClaim];
    if (typeof owner !== 'string' || typeof payload.sub !== 'string' || payload.sub === '') return undefined;
    const validOwner = Owner.from(owner);
    if (E.isLeft(validOwner)) return undefined;
    const scope = payload['scope'];
    if (scope !== undefined && typeof scope !== 'string') return undefined;
    const scopes = (scope ?? '').split(' ').filter((s): s is Scope => isScope(s));
    return { subject: payload.sub, owner: validOwner.right, scopes: new Set(scopes) };
  };

  const unavailable = (e: unknown): boolean =>
    e instanceof errors.JWKSTimeout || (key.kind === 'jwks' && !(e instanceof errors.JOSEError));

  return {
    verify: (token) => async () => {
      try {
        const { payload } = await jwtVerify(token, getKey, {
          algorithms,
          clockTolerance: options.clockToleranceSeconds,
          requiredClaims: ['exp', 'sub', options.ownerClaim],
          ...(options.issuer === undefined ? {} : { issuer: options.issuer }),
          ...(options.audience === undefined ? {} : { audience: options.audience }),
        });
        const principal = principalOf(payload);
        if (principal === undefined)
          options.logger?.debug({ reason: 'owner, sub or scope claim malformed' }, 'JWT rejected');
        return E.right(O.fromNullable(principal));
      } catch (e) {
        if (unavailable(e)) return E.left(tokenStoreUnavailable);
        if (e instanceof errors.JOSEError) options.logger?.debug({ reason: e.code, detail: e.message }, 'JWT rejected');
        return E.right(O.none);
      }
    },
    // A static key is always ready; a JWKS is ready once it can be fetched (jose caches it).
    ping:
      key.kind === 'jwks'
        ? async () => {
            try {
              const res = await fetch(key.url, { signal: AbortSignal.timeout(options.timeoutMs) });
              return res.ok ? E.right(undefined) : E.left(tokenStoreUnavailable);
            } catch {
              return E.left(tokenStoreUnavailable);
            }
          }
        : TE.right(undefined),
  };
};
