import sortedBtree from 'sorted-btree';
import * as TE from 'fp-ts/lib/TaskEither.js';
import type { InsertOutcome, PlantPage, PlantRepository } from '../../../application/ports/plant-repository.js';
import { compareIds, type Owner, type Plant, type PlantId } from '../../../domain/plant.js';

// sorted-btree is CommonJS with a default export.
const BTree = sortedBtree.default;
type BTree<K, V> = sortedBtree.default<K, V>;

/**
 * Plants in process memory: one B+ tree per owner, keyed by id, so a page is a seek plus `limit` steps
 * (O(limit + log n)) and an owner can only ever reach its own tree. Every operation runs to completion within one
 * turn of the event loop, so concurrent requests see each insert or delete whole. Lost when the process exits.
 */
export const memoryPlantRepository = (): PlantRepository => {
  const owners = new Map<Owner, BTree<PlantId, Plant>>();

  const treeOf = (owner: Owner): BTree<PlantId, Plant> => {
    let tree = owners.get(owner);
    if (tree === undefined) {
      tree = new BTree<PlantId, Plant>(undefined, compareIds);
      owners.set(owner, tree);
    }
    return tree;
  };

  return {
    insert: (owner, plant) =>
      TE.fromIO((): InsertOutcome => {
        const tree = treeOf(owner);
        const stored = tree.get(plant.id);
        if (stored !== undefined) return { _tag: 'Exists', stored };
        tree.set(plant.id, plant);
        return { _tag: 'Inserted' };
      }),

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
        if (tree.size === 0) owners.delete(owner);
        return true;
      }),

    ping: TE.right(undefined),
  };
};
