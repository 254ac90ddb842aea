import type { Option } from 'fp-ts/lib/Option.js';
import type { TaskEither } from 'fp-ts/lib/TaskEither.js';
import type { Principal } from '../../domain/principal.js';
import type { AuthUnavailable } from '../errors.js';

/**
 * Resolves a bearer token to its principal. `none` means the token is unknown, expired or revoked; a store that
 * cannot answer is `AuthUnavailable`, never `none`. Every adapter passes test/contracts/token-verifier.contract.ts.
 */
export interface TokenVerifier {
  readonly verify: (token: string) => TaskEither<AuthUnavailable, Option<Principal>>;
  /** Succeeds when the token store answers now. */
  readonly ping: TaskEither<AuthUnavailable, void>;
}
