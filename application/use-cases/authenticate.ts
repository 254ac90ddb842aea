import * as E from 'fp-ts/lib/Either.js';
import type { TaskEither } from 'fp-ts/lib/TaskEither.js';
import type { Principal } from '../../domain/principal.js';
import { invalidToken, type InvalidToken, type AuthUnavailable } from '../errors.js';
import type { TokenRejection, TokenVerifier } from '../ports/token-verifier.js';

/** Turns a bearer token into the principal it stands for. */
export const authenticate =
  ({ tokens }: { readonly tokens: TokenVerifier }) =>
  (token: string): TaskEither<InvalidToken | AuthUnavailable, Principal> =>
  async () => {
    let why: TokenRejection | undefined;
    const found = await tokens.verify(token, (w) => (why = w))();
    if (E.isLeft(found)) return found;
    if (found.right._tag === 'Some') return E.right(found.right.value);
    return E.left(why === undefined ? invalidToken : { ...invalidToken, ...why });
  };
