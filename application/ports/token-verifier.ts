import type { Option } from 'fp-ts/lib/Option.js';
import type { TaskEither } from 'fp-ts/lib/TaskEither.js';
import type { Principal } from '../../domain/principal.js';
import type { AuthUnavailable } from '../errors.js';

/** Why a token was refused: `reason` for the log (never the token), `description` only if the client may see it. */
export interface TokenRejection {
  readonly reason: string;
  readonly description?: string;
}

/** A bearer token's principal, or `none` (why to `rejected`); a store that cannot answer is `AuthUnavailable`. */
export interface TokenVerifier {
  readonly verify: (
    token: string,
    rejected?: (why: TokenRejection) => void,
  ) => TaskEither<AuthUnavailable, Option<Principal>>;
  /** Succeeds when the token store answers now. */
  readonly ping: TaskEither<AuthUnavailable, void>;
}
