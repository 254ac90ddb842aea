import { MongoClient, type Collection, type Document, type ObjectId } from 'mongodb';
import { COLLECTION } from './mongodb-plant-repository.js';
import { INDEX_SPECS, missingIndexes } from './indexes.js';
import { OUTSIDE_FROM } from './quota.js';

/**
 * Mends what the service cannot rebuild by itself: documents that share a key of a unique index, written while it was
 * missing, then builds the missing indexes. Idempotent and resumable: each step reads the collection as it is.
 * - Plants sharing a slot: all but the first (the least `_id`) move to fresh outside slots, where they count and move
 *   back in when the owner has room; not before `noticeMs` (`timings`'s repairWaitMs: quota.ts, RULE 5 and T2).
 * - Plants sharing an id: copies identical to the first written are deleted. Different plants under one id are listed
 *   and left (`conflicts`: the id index cannot be built until they are resolved), unless `keepFirst`: then the later
 *   ones are deleted, each printed first.
 * The decisions run over `RepairStore`, apart from the driver. `report`: one line of what the repair found or did.
 */
type RepairOptions = { readonly noticeMs: number; readonly keepFirst: boolean; report(line: string): void };
type RepairOutcome = Readonly<Record<'movedOut' | 'duplicatesDeleted' | 'conflicts', number>> & {
  readonly indexesBuilt: readonly string[];
};

/** A stored plant: `ref` names its document, `plant` is what a copy is compared by and what is printed. */
export type Shared<Ref> = { readonly ref: Ref; readonly owner: string; readonly slot: number; readonly plant: string };

/** The missing unique indexes, the documents sharing a key (groups of 2+, first written first), the writes, a wait. */
export interface RepairStore<Ref> {
  readonly missing: () => Promise<ReadonlyArray<'id' | 'slot'>>;
  readonly sharing: (key: 'id' | 'slot') => AsyncIterable<Array<Shared<Ref>>>;
  readonly delete: (doc: Shared<Ref>) => Promise<boolean>;
  readonly move: (doc: Shared<Ref>) => Promise<boolean>; // to a random outside slot (the store draws it)
  readonly build: (key: 'id' | 'slot') => Promise<string>;
  readonly sleep: (ms: number) => Promise<void>;
}

export const repair = async <Ref>(store: RepairStore<Ref>, options: RepairOptions): Promise<RepairOutcome> => {
  const missing = await store.missing();
  if (missing.length === 0) {
    options.report('both unique indexes are in place: nothing to repair');
    return { movedOut: 0, duplicatesDeleted: 0, conflicts: 0, indexesBuilt: [] };
  }
  options.report(`missing unique indexes: ${missing.join(', ')}`);

  let [duplicatesDeleted, conflicts, movedOut] = [0, 0, 0];
  if (missing.includes('id')) {
    for await (const [first, ...later] of store.sharing('id')) {
      for (const doc of later) {
        if (doc.plant !== first?.plant) {
          const what = `owner ${doc.owner}: ${first?.plant} (kept) and ${doc.plant}`;
          options.report(options.keepFirst ? `deleting the later plant of ${what}` : `different plants of ${what}`);
          conflicts += options.keepFirst ? 0 : 1;
          if (!options.keepFirst) continue;
        }
        duplicatesDeleted += +(await store.delete(doc));
      }
    }
  }

  if (missing.includes('slot')) {
    options.report(`waiting ${options.noticeMs} ms for every running service to notice the missing slot index`);
    await store.sleep(options.noticeMs);
    // A service that built the slot index during the wait could: no two plants share a slot then, and none moves.
    for await (const [, ...later] of (await store.missing()).includes('slot') ? store.sharing('slot') : [])
      for (const doc of later) movedOut += +(await store.move(doc));
    options.report(`${movedOut} plants that shared a slot moved outside (they count, and move back in)`);
  }

  const indexesBuilt: string[] = [];
  for (const key of await store.missing())
    if (key === 'slot' || conflicts === 0) indexesBuilt.push(await store.build(key));
  options.report(
    conflicts > 0
      ? 'repair incomplete: different plants share an id; run again with --keep-first to keep the first written'
      : `repair done: ${duplicatesDeleted} copies deleted, ${movedOut} moved outside, built ${indexesBuilt.join(', ')}`,
  );
  return { movedOut, duplicatesDeleted, conflicts, indexesBuilt };
};

type Stored = Document & { _id: ObjectId; owner: string; id: unknown; slot: number };

const spec = (key: 'id' | 'slot') => INDEX_SPECS.find((s) => key in s.key) ?? INDEX_SPECS[0];

/** The repair on MongoDB (every command names the owner); one pass sorted by (owner, key, _id) finds the groups. */
export const repairStorage = async (options: RepairOptions & { uri: string; db: string }): Promise<RepairOutcome> => {
  const client = new MongoClient(options.uri, { useBigInt64: true, serverSelectionTimeoutMS: 10_000 });
  try {
    const collection = client.db(options.db).collection<Stored>(COLLECTION);
    const plain = collection as unknown as Collection<Document>;
    const text = (plant: Document) => JSON.stringify(plant, (_, v: unknown) => (typeof v === 'bigint' ? `${v}` : v));
    const shared = ({ _id, owner, slot, ...plant }: Stored) => ({ ref: _id, owner, slot, plant: text(plant) });
    return await repair<ObjectId>(
      {
        missing: async () => (await missingIndexes(plain)).map((s) => ('id' in s.key ? 'id' : 'slot')),
        sharing: async function* (key) {
          let group: Stored[] = [];
          const sort = { owner: 1, [key]: 1, _id: 1 } as const;
          for await (const doc of collection.find({}, { sort, allowDiskUse: true, batchSize: 10_000 })) {
            if (group[0] !== undefined && (group[0].owner !== doc.owner || group[0][key] !== doc[key])) {
              if (group.length > 1) yield group.map(shared);
              group = [];
            }
            group.push(doc);
          }
          if (group.length > 1) yield group.map(shared);
        },
        delete: async ({ ref, owner }) => (await collection.deleteOne({ _id: ref, owner })).deletedCount === 1,
        move: async ({ ref, owner, slot }) => {
          const to = OUTSIDE_FROM + Math.floor(Math.random() * OUTSIDE_FROM);
          return (await collection.updateOne({ _id: ref, owner, slot }, { $set: { slot: to } })).modifiedCount === 1;
        },
        build: (key) => plain.createIndex(spec(key).key, { unique: true, name: spec(key).name }),
        sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
      },
      options,
    );
  } finally {
    await client.close();
  }
};
