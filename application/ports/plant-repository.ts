import type { TaskEither } from 'fp-ts/lib/TaskEither.js';
import type { Owner, Plant, PlantId } from '../../domain/plant.js';
import type { StorageFull, StorageUnavailable } from '../errors.js';

/**
 * What `insert` found. `Exists` carries the stored plant, to tell a retried create from a conflicting one. `OwnerFull`:
 * the owner keeps `maxPlants` plants and had none with this id. With a finite `maxPlants`, `count` is the owner's
 * plants as the adapter knows them (memory: exact; MongoDB: as the serving process counted them, once it has).
 */
export type InsertOutcome =
  | { readonly _tag: 'Inserted'; readonly count?: number }
  | { readonly _tag: 'Exists'; readonly stored: Plant; readonly count?: number }
  | { readonly _tag: 'OwnerFull'; readonly count: number };

/** `maxPlants` for an owner without a bound. */
export const NO_PLANT_LIMIT = Number.POSITIVE_INFINITY;

export interface PlantPage {
  /** Ascending by id, at most `limit` plants. */
  readonly plants: readonly Plant[];
  /** Whether the owner has plants beyond the last one returned. */
  readonly more: boolean;
}

/** The plant store, partitioned by owner; every adapter passes test/contracts/plant-repository.contract.ts. */
export interface PlantRepository {
  /**
   * Stores the plant unless the owner has one with its id (`Exists`) or keeps `maxPlants` (`OwnerFull`), atomically
   * against every call from any process. `StorageFull` when the store itself has no room. Durable before `Inserted`.
   */
  readonly insert: (
    owner: Owner,
    plant: Plant,
    maxPlants?: number,
  ) => TaskEither<StorageUnavailable | StorageFull, InsertOutcome>;
  /** The owner's plants with id greater than `after` (all when undefined), ascending, O(limit + log n). */
  readonly page: (owner: Owner, after: PlantId | undefined, limit: number) => TaskEither<StorageUnavailable, PlantPage>;
  /** Deletes the owner's plant with that id; `true` when there was one. */
  readonly remove: (owner: Owner, id: PlantId) => TaskEither<StorageUnavailable, boolean>;
  /** Succeeds when the store answers now. */
  readonly ping: TaskEither<StorageUnavailable, void>;
}
