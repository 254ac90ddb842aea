import * as E from 'fp-ts/lib/Either.js';
import type { TaskEither } from 'fp-ts/lib/TaskEither.js';
import { plantNotFound, type PlantNotFound } from '../../domain/errors.js';
import type { PlantId } from '../../domain/plant.js';
import { requireScope, type MissingScope, type Principal, type Scope } from '../../domain/principal.js';
import type { StorageUnavailable } from '../errors.js';
import type { PlantRepository } from '../ports/plant-repository.js';

export const deletePlantScope: Scope = 'plants:write';

export type DeletePlantError = MissingScope | PlantNotFound | StorageUnavailable;

/** Deletes one of the principal's owner's plants; another owner's plant is as missing as one never created. */
export const deletePlant =
  ({ plants }: { readonly plants: PlantRepository }) =>
  (principal: Principal, id: PlantId): TaskEither<DeletePlantError, void> =>
  async () => {
    const allowed = requireScope(principal, deletePlantScope);
    if (E.isLeft(allowed)) return allowed;
    const removed = await plants.remove(principal.owner, id)();
    if (E.isLeft(removed)) return removed;
    return removed.right ? E.right(undefined) : E.left(plantNotFound);
  };
