import { pipe } from 'fp-ts/lib/function.js';
import * as TE from 'fp-ts/lib/TaskEither.js';
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
  (principal: Principal, id: PlantId): TE.TaskEither<DeletePlantError, void> =>
    pipe(
      TE.fromEither(requireScope(principal, deletePlantScope)),
      TE.chainW(({ owner }) => plants.remove(owner, id)),
      TE.chainW((removed) => (removed ? TE.right(undefined) : TE.left(plantNotFound))),
    );
