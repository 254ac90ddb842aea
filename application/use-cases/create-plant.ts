import * as E from 'fp-ts/lib/Either.js';
import type { TaskEither } from 'fp-ts/lib/TaskEither.js';
import { plantConflict, type PlantConflict } from '../../domain/errors.js';
import { samePlant, type Plant } from '../../domain/plant.js';
import { requireScope, type MissingScope, type Principal, type Scope } from '../../domain/principal.js';
import type { StorageUnavailable } from '../errors.js';
import type { PlantRepository } from '../ports/plant-repository.js';

export const createPlantScope: Scope = 'plants:write';

export type CreatePlantError = MissingScope | PlantConflict | StorageUnavailable;

/**
 * Stores a new plant for the principal's owner. Creating a plant that is already stored exactly so is a safe retry
 * and answers the stored plant; the same id with another name or tag is a conflict and changes nothing.
 */
export const createPlant =
  ({ plants }: { readonly plants: PlantRepository }) =>
  (principal: Principal, candidate: Plant): TaskEither<CreatePlantError, Plant> =>
  async () => {
    const allowed = requireScope(principal, createPlantScope);
    if (E.isLeft(allowed)) return allowed;
    const outcome = await plants.insert(principal.owner, candidate)();
    if (E.isLeft(outcome)) return outcome;
    if (outcome.right._tag === 'Inserted') return E.right(candidate);
    return samePlant(outcome.right.stored, candidate) ? E.right(outcome.right.stored) : E.left(plantConflict);
  };
