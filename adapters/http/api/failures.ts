import type { InvalidToken, StorageFull, StorageUnavailable, AuthUnavailable } from '../../../application/errors.js';
import type { RateDecision } from '../../../application/application.js';
import type { RateLimited } from '../../../application/use-cases/admit-request.js';
import type { QuotaUsage } from '../../../application/use-cases/create-plant.js';
import type { FieldRuleBroken, PlantConflict, PlantNotFound, QuotaExceeded } from '../../../domain/errors.js';
import { PLANT_FIELD_NAMES } from '../../../domain/plant.js';
import type { MissingScope } from '../../../domain/principal.js';
import type { BodyRefusal } from '../server/body.js';
import type { MalformedBody } from './json.js';
import type { FailureResponse } from '../server/answer.js';
import { CLOSE } from '../server/answer.js';

/** Failures that only exist at the HTTP edge; reading a body reports its own (server/body.ts, json.ts). */
export type HttpFailure =
  | { readonly _tag: 'MissingCredentials' }
  | { readonly _tag: 'UnsupportedMediaType' }
  | { readonly _tag: 'UnsupportedContentEncoding' }
  | BodyRefusal
  | MalformedBody
  | { readonly _tag: 'RouteNotFound' }
  | { readonly _tag: 'MethodNotAllowed'; readonly allow: string }
  | { readonly _tag: 'InternalError' }
  | { readonly _tag: 'NotReady'; readonly down: readonly string[] };

/**
 * Everything a routed request can fail with, from any layer. What the server refuses before any route (the parser's
 * errors, Host, the HTTP version) it answers itself: server/before-routing.ts and server.ts.
 */
export type Failure =
  | HttpFailure
  | FieldRuleBroken
  | PlantConflict
  | PlantNotFound
  | MissingScope
  | InvalidToken
  | RateLimited
  | QuotaExceeded
  | StorageFull
  | StorageUnavailable
  | AuthUnavailable;

export type { FailureResponse };

export const REALM = 'Bearer realm="plants"';
/** An unknown path: where a newcomer reads what there is (the page first: it is for humans). */
export const ROUTE_NOT_FOUND = 'no such resource; the API reference is at /docs (and /openapi.json)';

/** Seconds a client should wait before retrying when a backend is unavailable. */
export const RETRY_AFTER_SECONDS = 1;

const unavailable = (what: string): FailureResponse => ({
  status: 503,
  message: `${what} is unavailable, retry later`,
  headers: { 'Retry-After': String(RETRY_AFTER_SECONDS) },
});

/** The plant's fields in words (PLANT_FIELDS), joined by "and" or "or". */
export const plantFieldsJoined = (conjunction: 'and' | 'or'): string =>
  PLANT_FIELD_NAMES.length === 1
    ? (PLANT_FIELD_NAMES[0] as string)
    : `${PLANT_FIELD_NAMES.slice(0, -1).join(', ')} ${conjunction} ${PLANT_FIELD_NAMES[PLANT_FIELD_NAMES.length - 1] as string}`;
const CONFLICT = `id: a plant with this id and a different ${plantFieldsJoined('or')} already exists`;

/** IETF RateLimit header fields (draft-ietf-httpapi-ratelimit-headers, three-field form). */
export const rateLimitHeaders = (d: RateDecision): Record<string, string> => ({
  'RateLimit-Limit': String(d.limit),
  'RateLimit-Remaining': String(d.remaining),
  'RateLimit-Reset': String(d.resetSeconds),
});

/** The caller's own owner's figures against its quota (POST /plants, when a quota applies). */
export const quotaHeaders = (q: QuotaUsage): Record<string, string> => ({
  'Quota-Limit': String(q.limit),
  'Quota-Used': String(q.used),
});

/** The one place where a failure becomes a status, a message and headers. */
export const toResponse = (failure: Failure): FailureResponse => {
  switch (failure._tag) {
    case 'FieldRuleBroken':
      return { status: 400, message: `${failure.field}: ${failure.rule}` };
    case 'MalformedBody':
      return { status: 400, message: `body: ${failure.reason}` };
    case 'MissingCredentials':
      return {
        status: 401,
        message: 'authorization: send a bearer token as "Authorization: Bearer <token>"',
        headers: { 'WWW-Authenticate': REALM },
      };
    case 'InvalidToken':
      return {
        status: 401,
        message: 'authorization: the bearer token is unknown, expired or revoked',
        headers: {
          'WWW-Authenticate':
            failure.description === undefined
              ? `${REALM}, error="invalid_token"`
              : `${REALM}, error="invalid_token", error_description="${failure.description}"`,
        },
      };
    case 'MissingScope':
      return {
        status: 403,
        message: `authorization: the token lacks the scope ${failure.scope}`,
        headers: { 'WWW-Authenticate': `${REALM}, error="insufficient_scope", scope="${failure.scope}"` },
      };
    case 'QuotaExceeded':
      // 403 without a WWW-Authenticate challenge: no other token would help; deleting plants would.
      return {
        status: 403,
        message: `quota: the owner keeps ${failure.used} plants and may keep at most ${failure.limit}; delete some to create more`,
        headers: quotaHeaders(failure),
      };
    case 'PlantNotFound':
      return { status: 404, message: 'id: no plant with this id' };
    case 'RouteNotFound':
      return { status: 404, message: ROUTE_NOT_FOUND };
    case 'MethodNotAllowed':
      return {
        status: 405,
        message: `method not allowed here; use ${failure.allow}`,
        headers: { Allow: failure.allow },
      };
    case 'PlantConflict':
      return { status: 409, message: CONFLICT };
    case 'PayloadTooLarge':
      return { status: 413, message: `body: must be at most ${failure.limit} bytes`, headers: CLOSE };
    case 'RateLimited':
      return {
        status: 429,
        message: `too many requests: at most ${failure.decision.limit} per window; retry in ${failure.decision.resetSeconds} s`,
        headers: { 'Retry-After': String(failure.decision.resetSeconds), ...rateLimitHeaders(failure.decision) },
      };
    case 'UnsupportedMediaType':
      return { status: 415, message: 'content-type: must be application/json' };
    case 'UnsupportedContentEncoding':
      // RFC 9110 §15.5.16: Accept-Encoding names the codings that would have been accepted.
      return {
        status: 415,
        message: 'content-encoding: send the body uncompressed; no content coding is supported',
        headers: { 'Accept-Encoding': 'identity' },
      };
    case 'BodiesBusy':
      return {
        status: 503,
        message: 'body: the server is reading as many request bodies as it may hold, retry later',
        headers: { 'Retry-After': String(RETRY_AFTER_SECONDS), Connection: 'close' },
      };
    case 'StorageFull':
      return { status: 507, message: 'storage: the store is full; no plant can be created until plants are deleted' };
    case 'InternalError':
      return { status: 500, message: 'internal error' };
    case 'NotReady':
      return {
        status: 503,
        message: `not ready: ${failure.down.join(' and ')} ${failure.down.length > 1 ? 'do' : 'does'} not answer`,
        headers: { 'Retry-After': String(RETRY_AFTER_SECONDS) },
      };
    case 'StorageUnavailable':
      return unavailable('storage');
    case 'AuthUnavailable':
      return unavailable('authentication');
    default: {
      const unhandled: never = failure;
      throw new Error(`unmapped failure ${JSON.stringify(unhandled)}`);
    }
  }
};
