import { pipe } from 'fp-ts/lib/function.js';
import * as TE from 'fp-ts/lib/TaskEither.js';
import type { Plant, PlantId } from '../../domain/plant.js';
import { requireScope, type MissingScope, type Principal, type Scope } from '../../domain/principal.js';
import type { StorageUnavailable } from '../errors.js';
import type { PlantRepository } from '../ports/plant-repository.js';

export const listPlantsScope: Scope = 'plants:read';
export const PAGE_DEFAULT = 100;
export const PAGE_MAX = 1000;

export interface ListPlantsQuery {
  /** A positive count; above PAGE_MAX it is served as PAGE_MAX; absent, PAGE_DEFAULT. */
  readonly limit?: number;
  /** Continue after this id (from the previous page's `next`). */
  readonly after?: PlantId;
}

export interface PlantListPage {
  readonly plants: readonly Plant[];
  /** Where the following page starts, and the page size served; absent on the last page. */
  readonly next?: { readonly after: PlantId; readonly limit: number };
}

export type ListPlantsError = MissingScope | StorageUnavailable;

/** One page of the principal's owner's plants, ascending by id. */
export const listPlants =
  ({ plants }: { readonly plants: PlantRepository }) =>
  (principal: Principal, query: ListPlantsQuery): TE.TaskEither<ListPlantsError, PlantListPage> => {
    const limit = Math.min(query.limit ?? PAGE_DEFAULT, PAGE_MAX);
    return pipe(
      TE.fromEither(requireScope(principal, listPlantsScope)),
      TE.chainW(({ owner }) => plants.page(owner, query.after, limit)),
      TE.map((page): PlantListPage => {
        const last = page.plants[page.plants.length - 1];
        return page.more && last !== undefined
          ? { plants: page.plants, next: { after: last.id, limit } }
          : { plants: page.plants };
      }),
    );
  };
