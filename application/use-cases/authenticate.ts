import { pipe } from 'fp-ts/lib/function.js';
import * as O from 'fp-ts/lib/Option.js';
import * as TE from 'fp-ts/lib/TaskEither.js';
import type { Principal } from '../../domain/principal.js';
import { invalidToken, type InvalidToken, type TokenStoreUnavailable } from '../errors.js';
import type { TokenVerifier } from '../ports/token-verifier.js';

/** Turns a bearer token into the principal it stands for. */
export const authenticate =
  ({ tokens }: { readonly tokens: TokenVerifier }) =>
  (token: string): TE.TaskEither<InvalidToken | TokenStoreUnavailable, Principal> =>
    pipe(
      tokens.verify(token),
      TE.chainW(
        O.match(
          () => TE.left<InvalidToken, Principal>(invalidToken),
          (principal) => TE.right(principal),
        ),
      ),
    );
