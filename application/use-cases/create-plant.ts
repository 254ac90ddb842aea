import * as E from 'fp-ts/lib/Either.js';
import type { TaskEither } from 'fp-ts/lib/TaskEither.js';
import { plantConflict, quotaExceeded, type PlantConflict, type QuotaExceeded } from '../../domain/errors.js';
import { samePlant, type Plant } from '../../domain/plant.js';
import { requireScope, type MissingScope, type Principal, type Scope } from '../../domain/principal.js';
import type { StorageFull, StorageUnavailable } from '../errors.js';
import { NO_PLANT_LIMIT, type PlantRepository } from '../ports/plant-repository.js';

export const createPlantScope: Scope = 'plants:write';

export type CreatePlantError = MissingScope | PlantConflict | QuotaExceeded | StorageUnavailable | StorageFull;

/** The owner's figures against its quota: how many plants it may keep, and how many it keeps. */
export interface QuotaUsage {
  readonly limit: number;
  readonly used: number;
}

export interface CreatedPlant {
  /** The plant as stored (the stored one, for a retried create). */
  readonly plant: Plant;
  /** The caller's own owner's usage; absent when no quota applies. */
  readonly quota?: QuotaUsage;
}

export interface CreatePlantSettings {
  /** How many plants one owner may keep; 0 or absent: no bound. */
  readonly maxPlantsPerOwner?: number;
}

/**
 * Stores a new plant for the principal's owner. The rules, in order: a plant already stored exactly so is a safe
 * retry and answers the stored plant, and the same id with another value in any field is a conflict, both whatever the
 * owner's count (so a retry still succeeds at the quota); only a new plant needs room, and an owner that already
 * keeps `maxPlantsPerOwner` plants is refused with its figures. The store checks id and room in one atomic step.
 */
export const createPlant =
  ({ plants, maxPlantsPerOwner = 0 }: { readonly plants: PlantRepository } & CreatePlantSettings) =>
  (principal: Principal, candidate: Plant): TaskEither<CreatePlantError, CreatedPlant> =>
  async () => {
    const allowed = requireScope(principal, createPlantScope);
    if (E.isLeft(allowed)) return allowed;
    const bounded = maxPlantsPerOwner > 0;
    const outcome = await plants.insert(principal.owner, candidate, bounded ? maxPlantsPerOwner : NO_PLANT_LIMIT)();
    if (E.isLeft(outcome)) return outcome;
    const found = outcome.right;
    if (found._tag === 'OwnerFull') return E.left(quotaExceeded(maxPlantsPerOwner, found.count));
    if (found._tag === 'Exists' && !samePlant(found.stored, candidate)) return E.left(plantConflict);
    const plant = found._tag === 'Exists' ? found.stored : candidate;
    return E.right(
      bounded && found.count !== undefined
        ? { plant, quota: { limit: maxPlantsPerOwner, used: found.count } }
        : { plant },
    );
  };
