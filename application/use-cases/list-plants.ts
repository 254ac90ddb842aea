import * as E from 'fp-ts/lib/Either.js';
import type { TaskEither } from 'fp-ts/lib/TaskEither.js';
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
  (principal: Principal, query: ListPlantsQuery): TaskEither<ListPlantsError, PlantListPage> =>
  async () => {
    const allowed = requireScope(principal, listPlantsScope);
    if (E.isLeft(allowed)) return allowed;
    const limit = Math.min(query.limit ?? PAGE_DEFAULT, PAGE_MAX);
    const page = await plants.page(principal.owner, query.after, limit)();
    if (E.isLeft(page)) return page;
    const last = page.right.plants[page.right.plants.length - 1];
    return E.right(
      page.right.more && last !== undefined
        ? { plants: page.right.plants, next: { after: last.id, limit } }
        : { plants: page.right.plants },
    );
  };
