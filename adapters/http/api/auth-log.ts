import type { Failure } from './failures.js';

/** Why a request was refused with 401 or 403, for its log line: never the token, only what was wrong with it. */
export const rejectionReason = (failure: Failure, authorization: string | undefined): string => {
  switch (failure._tag) {
    case 'MissingCredentials':
      if (authorization === undefined) return 'no Authorization header';
      return /^bearer /i.test(authorization)
        ? 'the bearer token is not an RFC 6750 b64token of at most 4096 characters'
        : 'the Authorization scheme is not Bearer';
    case 'InvalidToken':
      return failure.reason ?? 'the token is unknown, expired or revoked';
    case 'MissingScope':
      return `the token lacks the scope ${failure.scope}`;
    default:
      return failure._tag;
  }
};
