import type { ServerResponse } from 'node:http';
import * as E from 'fp-ts/lib/Either.js';
import type { Application } from '../../../application/application.js';
import { isBearerToken, requireScope, TOKEN_MAX, type Scope } from '../../../domain/principal.js';
import type { Caller, Exchange, Responder } from './respond.js';

const SCHEME = 'bearer';
const SPACE = 0x20;

/** The token of `Authorization: Bearer <token>` (RFC 6750), or `undefined`; linear, checked only up to TOKEN_MAX. */
export const bearerToken = (header: string | undefined): string | undefined => {
  if (header === undefined || header.length <= SCHEME.length + 1) return undefined;
  if (header.slice(0, SCHEME.length).toLowerCase() !== SCHEME || header.charCodeAt(SCHEME.length) !== SPACE) {
    return undefined;
  }
  let start = SCHEME.length + 1;
  while (header.charCodeAt(start) === SPACE) start++;
  const length = header.length - start;
  if (length < 1 || length > TOKEN_MAX) return undefined;
  const token = header.slice(start);
  return isBearerToken(token) ? token : undefined;
};

/**
 * What every plants route runs first, in one order: the token (401), the rate (429), the scope (403); only then does
 * a handler read its input, so an unauthorised request never learns whether it was valid. Resolves the admitted
 * caller, or `undefined` when a failure has been answered.
 */
export type Authorize = (req: Exchange, res: ServerResponse, scope: Scope) => Promise<Caller | undefined>;

export const authorizer =
  (app: Application, { fail }: Responder): Authorize =>
  async (req, res, scope) => {
    const token = bearerToken(req.headers.authorization);
    if (token === undefined) {
      fail(req, res, undefined, { _tag: 'MissingCredentials' });
      return undefined;
    }
    const principal = await app.authenticate(token)();
    if (E.isLeft(principal)) {
      fail(req, res, undefined, principal.left);
      return undefined;
    }
    let caller: Caller = { principal: principal.right, rate: undefined };
    if (app.admit !== undefined) {
      const admitted = await app.admit(principal.right)();
      if (E.isLeft(admitted)) {
        fail(req, res, caller, admitted.left);
        return undefined;
      }
      if (admitted.right._tag === 'Some') caller = { principal: principal.right, rate: admitted.right.value };
    }
    const allowed = requireScope(principal.right, scope);
    if (E.isLeft(allowed)) {
      fail(req, res, caller, allowed.left);
      return undefined;
    }
    return caller;
  };
