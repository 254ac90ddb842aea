import type { TaskEither } from 'fp-ts/lib/TaskEither.js';
import type { Owner, Plant, PlantId } from '../../domain/plant.js';
import type { StorageFull, StorageUnavailable } from '../errors.js';

/**
 * What `insert` found. `Exists` carries the plant stored under that owner and id (read once the insert was refused),
 * so the caller can tell a retried create from a conflicting one. `OwnerFull`: the owner keeps `maxPlants` plants (or
 * more, counted during the call) and had none with this id when last read. When `insert` was given a finite
 * `maxPlants`, `Inserted` and `Exists` may carry `count`: the owner's plants as the adapter knows them (memory: exact;
 * MongoDB: as the serving process counted them, once it has).
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

/**
 * The plant store, partitioned by owner: no operation can reach another owner's plants.
 * Every adapter passes test/contracts/plant-repository.contract.ts.
 */
export interface PlantRepository {
  /**
   * Stores the plant unless the owner has one with its id (`Exists`, however many plants the owner keeps) or already
   * keeps `maxPlants` plants (`OwnerFull`; default: no bound). Atomic against every other call, from any process:
   * concurrent inserts never leave an owner with more than `maxPlants` plants, and a plant removed frees its room at
   * once. `StorageFull` when the store itself has no room, whatever the owner. Durable before it resolves `Inserted`.
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
