import { pipe } from 'fp-ts/lib/function.js';
import * as TE from 'fp-ts/lib/TaskEither.js';
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
  (principal: Principal, candidate: Plant): TE.TaskEither<CreatePlantError, Plant> =>
    pipe(
      TE.fromEither(requireScope(principal, createPlantScope)),
      TE.chainW(({ owner }) => plants.insert(owner, candidate)),
      TE.chainW((outcome) => {
        if (outcome._tag === 'Inserted') return TE.right(candidate);
        return samePlant(outcome.stored, candidate) ? TE.right(outcome.stored) : TE.left(plantConflict);
      }),
    );
