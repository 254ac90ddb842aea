import { randomBytes } from 'node:crypto';
import * as E from 'fp-ts/lib/Either.js';
import type { Logger } from '../application/ports/logger.js';
import type { PlantRepository } from '../application/ports/plant-repository.js';
import type { TokenVerifier } from '../application/ports/token-verifier.js';
import { Owner } from '../domain/plant.js';
import { SCOPES } from '../domain/principal.js';
import { memoryPlantRepository } from '../adapters/storage/memory/memory-plant-repository.js';
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
export const connectBackends = async (config: Config, _logger: Logger): Promise<Backends> => {
  const closers: Array<() => Promise<void>> = [];
  const plants = (() => {
    switch (config.storage.kind) {
      case 'memory':
        return memoryPlantRepository();
      case 'mongodb':
        throw new ConfigError('STORAGE: mongodb is not available in this build; for example STORAGE=memory');
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
