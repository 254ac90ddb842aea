import * as O from 'fp-ts/lib/Option.js';
import * as TE from 'fp-ts/lib/TaskEither.js';
import { storageUnavailable, authUnavailable } from '../../application/errors.js';
import type { PlantRepository } from '../../application/ports/plant-repository.js';
import type { TokenVerifier } from '../../application/ports/token-verifier.js';
import type { Principal } from '../../domain/principal.js';

/** A store that never answers in time: every call fails as the adapters report a down server. */
export const downRepository: PlantRepository = {
  insert: () => TE.left(storageUnavailable),
  page: () => TE.left(storageUnavailable),
  remove: () => TE.left(storageUnavailable),
  ping: TE.left(storageUnavailable),
};

export const downTokenStore: TokenVerifier = {
  verify: () => TE.left(authUnavailable),
  ping: TE.left(authUnavailable),
};

/** Tokens resolved from a plain map, for use-case tests above the port. */
export const tokensFrom = (byToken: Record<string, Principal>): TokenVerifier => ({
  verify: (token) => TE.right(O.fromNullable(byToken[token])),
  ping: TE.right(undefined),
});
