import * as E from 'fp-ts/lib/Either.js';
import * as O from 'fp-ts/lib/Option.js';
import * as TE from 'fp-ts/lib/TaskEither.js';
import * as jose from 'jose';
import { authUnavailable, type AuthUnavailable } from '../../../application/errors.js';
import type { TokenRejection, TokenVerifier } from '../../../application/ports/token-verifier.js';
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
  /** How long fetched JWKS keys are used before they are fetched again (jose's default: 10 minutes). */
  readonly jwksCacheMaxAgeMs?: number;
  /** After a fetch, how long an unknown `kid` is refused without fetching again (jose's default: 30 s). */
  readonly jwksCooldownMs?: number;
  /** Why the key set could not be had (its status, not JSON, a timeout): the reason of the outage log line. */
  readonly keySourceFailed?: (reason: string) => void;
  /**
   * How every fetch of the key set runs: the token store's breaker (fail fast), which refuses a fetch at once while
   * the key source is known down. Only fetches meet it: a token whose key is cached is verified whatever it says.
   */
  readonly keyFetches?: <A>(
    operation: string,
    fetch: TE.TaskEither<AuthUnavailable, A>,
  ) => TE.TaskEither<AuthUnavailable, A>;
}

/** The JWKS URL did not answer with a key set (refused, timed out, not 200, not JSON, not a JWKS), or was not asked. */
class KeySourceUnavailable extends Error {}

const JWKS_ACCEPT = 'application/json, application/jwk-set+json';

/** Fetches the key set: every way the key source can fail is KeySourceUnavailable, never an invalid token. */
const fetchKeySet = async (url: string, init: RequestInit): Promise<jose.JSONWebKeySet> => {
  let response: Response;
  try {
    response = await fetch(url, init);
  } catch (e) {
    // fetch's own TypeError says only "fetch failed"; its cause has the code (ECONNREFUSED, UND_ERR_SOCKET).
    const code = (e as { cause?: { code?: unknown } }).cause?.code;
    throw new KeySourceUnavailable(
      `the JWKS URL did not answer: ${typeof code === 'string' ? code : e instanceof Error ? e.name : String(e)}`,
    );
  }
  if (response.status !== 200) {
    await response.body?.cancel().catch(() => undefined);
    throw new KeySourceUnavailable(`the JWKS URL answered ${response.status}`);
  }
  let json: unknown;
  try {
    json = await response.json();
  } catch {
    throw new KeySourceUnavailable('the JWKS URL did not answer JSON');
  }
  try {
    jose.createLocalJWKSet(json as jose.JSONWebKeySet); // throws JWKSInvalid unless it is a key set
  } catch {
    throw new KeySourceUnavailable('the JWKS URL did not answer a JSON Web Key Set');
  }
  return json as jose.JSONWebKeySet;
};

/**
 * Signed JWTs (AUTH=jwt), verified with jose: HS256, RS256/ES256 with a public key, or a JWKS URL. `exp`, `sub` and
 * the owner claim are required; `iss` and `aud` are checked when configured. Scopes: the `scope` claim, a
 * space-delimited string (RFC 8693) or an array of strings. A failed check is a 401 and goes to `rejected` (never the
 * token); a JWKS URL that does not answer a key set in time is AuthUnavailable (503).
 */
export const jwtTokenVerifier = async (options: JwtOptions): Promise<TokenVerifier> => {
  const { key } = options;
  const keyFetches = options.keyFetches ?? ((_operation, fetch) => fetch);
  /** One fetch of the key set through the breaker; why it failed is reported before the breaker hears of it. */
  const fetchKeys = (url: string, init: RequestInit): TE.TaskEither<AuthUnavailable, jose.JSONWebKeySet> =>
    keyFetches('fetch keys', async () => {
      try {
        return E.right(await fetchKeySet(url, init));
      } catch (e) {
        options.keySourceFailed?.(e instanceof KeySourceUnavailable ? e.message : `the JWKS URL: ${String(e)}`);
        return E.left(authUnavailable);
      }
    });
  let getKey: jose.JWTVerifyGetKey | Uint8Array | Awaited<ReturnType<typeof jose.importSPKI>>;
  let algorithms: string[];
  switch (key.kind) {
    case 'secret':
      getKey = new TextEncoder().encode(key.secret);
      algorithms = ['HS256'];
      break;
    case 'public-key':
      getKey = await jose.importSPKI(key.pem, key.algorithm);
      algorithms = [key.algorithm];
      break;
    case 'jwks':
      getKey = jose.createRemoteJWKSet(new URL(key.url), {
        timeoutDuration: options.timeoutMs,
        ...(options.jwksCacheMaxAgeMs === undefined ? {} : { cacheMaxAge: options.jwksCacheMaxAgeMs }),
        ...(options.jwksCooldownMs === undefined ? {} : { cooldownDuration: options.jwksCooldownMs }),
        [jose.customFetch]: async (url, init) => {
          const keys = await fetchKeys(url, init)();
          if (E.isLeft(keys)) throw new KeySourceUnavailable('the key set could not be fetched');
          return Response.json(keys.right);
        },
      });
      algorithms = ['RS256', 'ES256'];
      break;
  }

  /** The principal the claims name, or which claim is wrong. */
  const principalOf = (payload: jose.JWTPayload): E.Either<string, Principal> => {
    if (typeof payload.sub !== 'string' || payload.sub === '') return E.left('the sub claim is not a non-empty string');
    const owner = payload[options.ownerClaim];
    const validOwner = typeof owner === 'string' ? Owner.from(owner) : undefined;
    if (validOwner === undefined || E.isLeft(validOwner))
      return E.left(`the owner claim ${JSON.stringify(options.ownerClaim)} is not 1 to 256 characters of text`);
    const scope = payload['scope'];
    const granted =
      scope === undefined
        ? []
        : typeof scope === 'string'
          ? scope.split(' ')
          : Array.isArray(scope) && scope.every((s) => typeof s === 'string')
            ? scope
            : undefined;
    if (granted === undefined)
      return E.left('the scope claim is neither a space-delimited string nor an array of strings');
    const scopes = granted.filter((s): s is Scope => isScope(s));
    return E.right({ subject: payload.sub, owner: validOwner.right, scopes: new Set(scopes) });
  };

  /** What jose found wrong, for the log line; the client learns only of expiry (RFC 6750): more would help a forger. */
  const rejectionOf = (e: jose.errors.JOSEError): TokenRejection => {
    if (e instanceof jose.errors.JWTExpired)
      return { reason: 'the token expired (exp)', description: 'The access token expired' };
    if (e instanceof jose.errors.JWTClaimValidationFailed)
      return { reason: `the ${e.claim} claim ${e.reason === 'missing' ? 'is missing' : `failed: ${e.message}`}` };
    return { reason: `${e.code}: ${e.message}` };
  };

  /**
   * The key set could not be fetched (its failure already reported by `fetchKeys`): 503, never 401. A `kid` absent
   * from a key set fetched fine is the token's fault (401); one that needs a fetch the key source cannot answer now
   * may be a key just rotated in (503).
   */
  const unavailable = (e: unknown): boolean =>
    e instanceof KeySourceUnavailable ||
    e instanceof jose.errors.JWKSTimeout ||
    e instanceof jose.errors.JWKSInvalid ||
    (key.kind === 'jwks' && !(e instanceof jose.errors.JOSEError));

  return {
    verify: (token, rejected) => async () => {
      try {
        const { payload } = await jose.jwtVerify(token, getKey, {
          algorithms,
          clockTolerance: options.clockToleranceSeconds,
          requiredClaims: ['exp', 'sub', options.ownerClaim],
          ...(options.issuer === undefined ? {} : { issuer: options.issuer }),
          ...(options.audience === undefined ? {} : { audience: options.audience }),
        });
        const principal = principalOf(payload);
        if (E.isRight(principal)) return E.right(O.some(principal.right));
        rejected?.({ reason: principal.left });
        return E.right(O.none);
      } catch (e) {
        if (unavailable(e)) return E.left(authUnavailable);
        rejected?.(e instanceof jose.errors.JOSEError ? rejectionOf(e) : { reason: 'not a JWT' });
        return E.right(O.none);
      }
    },
    // A static key is always ready; a JWKS is ready when it can be fetched now and is a key set.
    ping:
      key.kind === 'jwks'
        ? async () => {
            const keys = await fetchKeys(key.url, {
              signal: AbortSignal.timeout(options.timeoutMs),
              redirect: 'manual',
              headers: { accept: JWKS_ACCEPT },
            })();
            return E.isLeft(keys) ? keys : E.right(undefined);
          }
        : TE.right(undefined),
  };
};
