import { randomBytes } from 'node:crypto';
import * as E from 'fp-ts/lib/Either.js';
import type { Logger } from '../application/ports/logger.js';
import type { PlantRepository } from '../application/ports/plant-repository.js';
import type { TokenVerifier } from '../application/ports/token-verifier.js';
import { Owner } from '../domain/plant.js';
import { SCOPES } from '../domain/principal.js';
import { memoryPlantRepository } from '../adapters/storage/memory/memory-plant-repository.js';
import { mongoPlantStore } from '../adapters/storage/mongodb/mongodb-plant-repository.js';
import { sha256, staticTokenVerifier, type StaticToken } from '../adapters/tokens/static/static-token-verifier.js';
import { ConfigError, type Config, type StaticTokenEntry } from './config.js';

/** The adapters the configuration chose, connected, and how to close them. */
export interface Backends {
  readonly plants: PlantRepository;
  readonly tokens: TokenVerifier;
  /** A token made for this run when none was configured; printed once by main. */
  readonly generatedToken?: string;
  readonly close: () => Promise<void>;
}

const toStaticToken = (entry: StaticTokenEntry): StaticToken => {
  const owner = Owner.from(entry.owner);
  if (E.isLeft(owner)) throw new ConfigError(`AUTH_TOKENS: owner ${owner.left.rule}`);
  return {
    sha256: 'token' in entry.secret ? sha256(entry.secret.token) : Buffer.from(entry.secret.sha256, 'hex'),
    principal: { subject: entry.subject, owner: owner.right, scopes: new Set(entry.scopes) },
  };
};

const staticTokens = (configured: readonly StaticTokenEntry[] | undefined) => {
  if (configured !== undefined && configured.length > 0) {
    return { tokens: staticTokenVerifier(configured.map(toStaticToken)) };
  }
  const token = randomBytes(32).toString('base64url');
  const local: StaticTokenEntry = { secret: { token }, owner: 'local', subject: 'local', scopes: SCOPES };
  return { tokens: staticTokenVerifier([toStaticToken(local)]), generatedToken: token };
};

/** Chooses and connects the adapters that the configuration names; the only place that choice is made. */
export const connectBackends = async (config: Config, logger: Logger): Promise<Backends> => {
  const closers: Array<() => Promise<void>> = [];
  const plants = (() => {
    const storage = config.storage;
    switch (storage.kind) {
      case 'memory':
        return memoryPlantRepository();
      case 'mongodb': {
        let store: ReturnType<typeof mongoPlantStore>;
        try {
          store = mongoPlantStore({ ...storage, logger });
        } catch {
          // The driver's parse error may quote the URI, credentials included: say only what is wrong.
          throw new ConfigError(
            'MONGODB_URI: is not a valid MongoDB connection string; for example MONGODB_URI=mongodb://127.0.0.1:27017',
          );
        }
        closers.push(store.close);
        return store.repository;
      }
    }
  })();
  const { tokens, generatedToken } = staticTokens(config.auth.tokens);
  return {
    plants,
    tokens,
    ...(generatedToken === undefined ? {} : { generatedToken }),
    close: async () => {
      await Promise.allSettled(closers.map((close) => close()));
    },
  };
};
