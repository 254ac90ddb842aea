import sortedBtree from 'sorted-btree';
import * as E from 'fp-ts/lib/Either.js';
import * as TE from 'fp-ts/lib/TaskEither.js';
import { storageFull } from '../../../application/errors.js';
import { NO_PLANT_LIMIT, type PlantPage, type PlantRepository } from '../../../application/ports/plant-repository.js';
import { compareIds, type Owner, type Plant, type PlantId } from '../../../domain/plant.js';

// sorted-btree is CommonJS with a default export.
const BTree = sortedBtree.default;
type BTree<K, V> = sortedBtree.default<K, V>;

export interface MemoryStoreOptions {
  /** How many plants the store keeps in all, across owners (see capacity.ts); default: no bound. */
  readonly maxPlants?: number;
}

/**
 * Plants in process memory: one B+ tree per owner, keyed by id, so a page is a seek plus `limit` steps
 * (O(limit + log n)) and an owner can only ever reach its own tree. Every operation runs to completion within one
 * turn of the event loop, so concurrent requests see each insert or delete whole, and the counts that bound an
 * owner (its tree's size) and the store (`total`) are exact. Lost when the process exits.
 */
export const memoryPlantRepository = ({ maxPlants = NO_PLANT_LIMIT }: MemoryStoreOptions = {}): PlantRepository => {
  const owners = new Map<Owner, BTree<PlantId, Plant>>();
  let total = 0;

  const treeOf = (owner: Owner): BTree<PlantId, Plant> => {
    let tree = owners.get(owner);
    if (tree === undefined) {
      tree = new BTree<PlantId, Plant>(undefined, compareIds);
      owners.set(owner, tree);
    }
    return tree;
  };

  return {
    insert:
      (owner, plant, maxPerOwner = NO_PLANT_LIMIT) =>
      async () => {
        // One synchronous step from here to the answer: nothing else runs between the checks and the write.
        const bounded = Number.isFinite(maxPerOwner);
        const tree = owners.get(owner);
        const count = tree?.size ?? 0;
        const stored = tree?.get(plant.id);
        if (stored !== undefined)
          return E.right(bounded ? { _tag: 'Exists', stored, count } : { _tag: 'Exists', stored });
        if (count >= maxPerOwner) return E.right({ _tag: 'OwnerFull', count });
        if (total >= maxPlants) return E.left(storageFull);
        treeOf(owner).set(plant.id, plant);
        total++;
        return E.right(bounded ? { _tag: 'Inserted', count: count + 1 } : { _tag: 'Inserted' });
      },

    page: (owner, after, limit) =>
      TE.fromIO((): PlantPage => {
        const tree = owners.get(owner);
        if (tree === undefined) return { plants: [], more: false };
        const plants: Plant[] = [];
        let more = false;
        // entries(k) starts at the first key >= k; the cursor's own id was served on the previous page.
        for (const [id, plant] of tree.entries(after)) {
          if (id === after) continue;
          if (plants.length === limit) {
            more = true;
            break;
          }
          plants.push(plant);
        }
        return { plants, more };
      }),

    remove: (owner, id) =>
      TE.fromIO(() => {
        const tree = owners.get(owner);
        if (tree === undefined || !tree.delete(id)) return false;
        total--;
        if (tree.size === 0) owners.delete(owner);
        return true;
      }),

    ping: TE.right(undefined),
  };
};
