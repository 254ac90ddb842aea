import type { PlantRepository } from '../ports/plant-repository.js';
import type { TokenVerifier } from '../ports/token-verifier.js';

export type Backend = 'storage' | 'token store';

/** The backends that do not answer now, by name (never by address); empty when the service is ready. */
export const checkReadiness =
  ({ plants, tokens }: { readonly plants: PlantRepository; readonly tokens: TokenVerifier }) =>
  async (): Promise<readonly Backend[]> => {
    const [storage, tokenStore] = await Promise.all([plants.ping(), tokens.ping()]);
    const down: Backend[] = [];
    if (storage._tag === 'Left') down.push('storage');
    if (tokenStore._tag === 'Left') down.push('token store');
    return down;
  };
