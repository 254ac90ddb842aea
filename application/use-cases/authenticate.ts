import * as E from 'fp-ts/lib/Either.js';
import type { TaskEither } from 'fp-ts/lib/TaskEither.js';
import type { Principal } from '../../domain/principal.js';
import { invalidToken, type InvalidToken, type AuthUnavailable } from '../errors.js';
import type { TokenVerifier } from '../ports/token-verifier.js';

/** Turns a bearer token into the principal it stands for. */
export const authenticate =
  ({ tokens }: { readonly tokens: TokenVerifier }) =>
  (token: string): TaskEither<InvalidToken | AuthUnavailable, Principal> =>
  async () => {
    const found = await tokens.verify(token)();
    if (E.isLeft(found)) return found;
    return found.right._tag === 'Some' ? E.right(found.right.value) : E.left(invalidToken);
  };
