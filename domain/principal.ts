import * as E from 'fp-ts/lib/Either.js';
import type { Owner } from './plant.js';

export const SCOPES = ['plants:read', 'plants:write'] as const;
export type Scope = (typeof SCOPES)[number];

export const isScope = (s: string): s is Scope => (SCOPES as readonly string[]).includes(s);

/** Who is calling (`subject`), for which tenant (`owner`), allowed to do what (`scopes`). */
export interface Principal {
  readonly subject: string;
  readonly owner: Owner;
  readonly scopes: ReadonlySet<Scope>;
}

/** The principal lacks the scope that the operation needs. */
export interface MissingScope {
  readonly _tag: 'MissingScope';
  readonly scope: Scope;
}

export const requireScope = (principal: Principal, scope: Scope): E.Either<MissingScope, Principal> =>
  principal.scopes.has(scope) ? E.right(principal) : E.left({ _tag: 'MissingScope', scope });

/** The longest bearer token the service reads (the contract's bound). */
export const TOKEN_MAX = 4096;

/** RFC 6750 `b64token`. Its character classes are disjoint, so the match is linear. */
const B64TOKEN = /^[A-Za-z0-9\-._~+/]+=*$/;

/** Whether the text can be a bearer token: an RFC 6750 b64token of 1 to TOKEN_MAX characters (the one rule). */
export const isBearerToken = (s: string): boolean => s.length >= 1 && s.length <= TOKEN_MAX && B64TOKEN.test(s);
