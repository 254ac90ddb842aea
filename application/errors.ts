/** Failures of the world outside the domain, as the use cases see them through their ports. */

/** The plant store did not answer in time, or at all. Safe to retry. */
export interface StorageUnavailable {
  readonly _tag: 'StorageUnavailable';
  /** The store answered, but this request's writes kept colliding with its owner's other writes: no outage. */
  readonly contended?: true;
}

/** The plant store has no room for another plant, whoever asks: its capacity, not an owner's quota. */
export interface StorageFull {
  readonly _tag: 'StorageFull';
}

/** What tokens are checked against did not answer in time: never read as "token unknown". */
export interface AuthUnavailable {
  readonly _tag: 'AuthUnavailable';
}

/** The rate limiter's store did not answer in time, or at all. */
export interface RateLimiterUnavailable {
  readonly _tag: 'RateLimiterUnavailable';
}

/** An unknown, expired or revoked token: `reason` for the log line, `description` for the client (RFC 6750). */
export interface InvalidToken {
  readonly _tag: 'InvalidToken';
  readonly reason?: string;
  readonly description?: string;
}

export const storageUnavailable: StorageUnavailable = { _tag: 'StorageUnavailable' };
export const storageContended: StorageUnavailable = { _tag: 'StorageUnavailable', contended: true };
export const storageFull: StorageFull = { _tag: 'StorageFull' };
export const authUnavailable: AuthUnavailable = { _tag: 'AuthUnavailable' };
export const rateLimiterUnavailable: RateLimiterUnavailable = { _tag: 'RateLimiterUnavailable' };
export const invalidToken: InvalidToken = { _tag: 'InvalidToken' };
