import type { ServerResponse } from 'node:http';
import * as E from 'fp-ts/lib/Either.js';
import type { Application } from '../../../application/application.js';
import { requireScope, type Scope } from '../../../domain/principal.js';
import { bearerToken } from './auth.js';
import type { Caller, Exchange, Responder } from './respond.js';

/**
 * The request pipeline every plants route runs first, in one order: the bearer token (401), the principal's rate
 * allowance (429), the operation's scope (403). Only then does a handler read the path, query or body, so an
 * unauthenticated or unauthorised request never learns whether its input would have been valid.
 * Resolves the admitted caller, which the handler hands to the responder with its answer, or `undefined` when a
 * failure has been answered.
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
