import { hash, randomBytes } from 'node:crypto';
import * as E from 'fp-ts/lib/Either.js';
import * as O from 'fp-ts/lib/Option.js';
import * as TE from 'fp-ts/lib/TaskEither.js';
import * as t from 'io-ts';
import type { Redis } from 'ioredis';
import { tokenStoreUnavailable, type TokenStoreUnavailable } from '../../../application/errors.js';
import type { TokenVerifier } from '../../../application/ports/token-verifier.js';
import { Owner } from '../../../domain/plant.js';
import { isScope, type Principal, type Scope } from '../../../domain/principal.js';

/**
 * Opaque tokens in Redis (AUTH=redis). A token is kept only as its SHA-256: the key is `plantstore:token:<hex>`, a
 * hash of owner, subject and space-separated scopes, with the token's expiry as the key's TTL. Revoking deletes the
 * key. A lookup that Redis cannot answer in time is TokenStoreUnavailable, never "unknown token".
 */
export const KEY_PREFIX = 'plantstore:token:';
export const keyOf = (token: string): string => KEY_PREFIX + hash('sha256', token, 'hex');

const StoredPrincipal = t.type({ owner: t.string, subject: t.string, scopes: t.string });

const decodeRecord = (record: Record<string, string>): Principal | undefined => {
  const raw = StoredPrincipal.decode(record);
  if (E.isLeft(raw)) return undefined;
  const owner = Owner.from(raw.right.owner);
  const scopes = raw.right.scopes.split(' ').filter((s) => s !== '');
  if (E.isLeft(owner) || raw.right.subject === '' || !scopes.every(isScope)) return undefined;
  return { owner: owner.right, subject: raw.right.subject, scopes: new Set(scopes as Scope[]) };
};

const attempt =
  <A>(run: () => Promise<A>): TE.TaskEither<TokenStoreUnavailable, A> =>
  async () => {
    try {
      return E.right(await run());
    } catch {
      // Connection refused, closed, command timeout, not writable: all mean the store did not answer.
      return E.left(tokenStoreUnavailable);
    }
  };

export interface TokenGrant {
  readonly owner: string;
  readonly subject: string;
  readonly scopes: readonly Scope[];
  /** Seconds until the token expires; none when undefined. */
  readonly ttlSeconds?: number;
}

export interface RedisTokenStore {
  readonly verifier: TokenVerifier;
  /** Makes a new token (256 bits from the CSPRNG) for the grant and stores its hash; answers the token. */
  readonly issue: (grant: TokenGrant) => TE.TaskEither<TokenStoreUnavailable, string>;
  /** Deletes the token; `true` when it existed. */
  readonly revoke: (token: string) => TE.TaskEither<TokenStoreUnavailable, boolean>;
}

export interface RedisTokenStoreOptions {
  /**
   * How long a positive lookup is served from process memory, in ms (0: never). A revoked token keeps working on
   * this process for at most this long; an expiring token never outlives its own TTL in the cache.
   */
  readonly cacheTtlMs: number;
  /** Bound on cached tokens; the oldest entries go first. */
  readonly cacheMax?: number;
}

export const redisTokenStore = (redis: Redis, options: RedisTokenStoreOptions): RedisTokenStore => {
  const cacheMax = options.cacheMax ?? 10_000;
  const cache = new Map<string, { principal: Principal; until: number }>();

  const remember = (key: string, principal: Principal, pttl: number) => {
    if (options.cacheTtlMs <= 0) return;
    const ttl = pttl > 0 ? Math.min(options.cacheTtlMs, pttl) : options.cacheTtlMs;
    if (cache.size >= cacheMax) cache.delete(cache.keys().next().value as string);
    cache.set(key, { principal, until: Date.now() + ttl });
  };

  const verifier: TokenVerifier = {
    verify: (token) => {
      const key = keyOf(token);
      const cached = cache.get(key);
      if (cached !== undefined) {
        if (cached.until > Date.now()) return TE.right(O.some(cached.principal));
        cache.delete(key);
      }
      return attempt(async () => {
        const replies = await redis.multi().hgetall(key).pttl(key).exec();
        const [[recordErr, record] = [], [pttlErr, pttl] = []] = replies ?? [];
        if (recordErr || pttlErr) throw recordErr ?? pttlErr;
        const principal = decodeRecord((record ?? {}) as Record<string, string>);
        if (principal === undefined) return O.none;
        remember(key, principal, Number(pttl));
        return O.some(principal);
      });
    },
    ping: attempt(async () => {
      await redis.ping();
    }),
  };

  return {
    verifier,
    issue: (grant) =>
      attempt(async () => {
        const token = randomBytes(32).toString('base64url');
        const key = keyOf(token);
        const tx = redis
          .multi()
          .hset(key, { owner: grant.owner, subject: grant.subject, scopes: grant.scopes.join(' ') });
        if (grant.ttlSeconds !== undefined) tx.expire(key, grant.ttlSeconds);
        const replies = await tx.exec();
        const failed = replies?.find(([err]) => err !== null);
        if (replies === null || failed !== undefined) throw failed?.[0] ?? new Error('transaction aborted');
        return token;
      }),
    revoke: (token) =>
      attempt(async () => {
        cache.delete(keyOf(token));
        return (await redis.del(keyOf(token))) === 1;
      }),
  };
};
