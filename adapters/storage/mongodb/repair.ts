import { MongoClient, type Collection, type Document, type ObjectId } from 'mongodb';
import { COLLECTION } from './mongodb-plant-repository.js';
import { INDEX_SPECS, missingIndexes } from './indexes.js';
import { OUTSIDE_FROM } from './quota.js';

/**
 * Mends what the service cannot rebuild by itself: documents that share a key of a unique index, written while it was
 * missing, and then builds the missing indexes. Idempotent and resumable: each step reads the collection as it is
 * and changes only what still needs it, so a repair cut short is finished by running it again.
 *
 * - Plants sharing a slot: all but the first (the least `_id`, by its creating process's clock) move to fresh outside
 *   slots (quota.ts), where they count and move back in when the owner has room. Nothing is deleted. Before it moves
 *   any, the repair waits `noticeMs` after it first saw the slot index missing: longer than every running service's
 *   index check (30 s) and a request's deadline, so that each has forgotten what it knew of owners' slots and ended
 *   the requests that began before (quota.ts, `forget`), and none trusts a look made before a plant moved outside.
 * - Plants sharing an id: copies identical to the first written are deleted (the plant is kept). Different plants
 *   under one id are listed and left, unless `keepFirst`: then the later ones are deleted, each printed first.
 */
/** `report`: one line of what the repair found or did. */
export interface RepairOptions {
  readonly uri: string;
  readonly db: string;
  readonly noticeMs: number;
  readonly keepFirst: boolean;
  readonly report: (line: string) => void;
}

/** `conflicts`: different plants under one (owner, id), left: the id index cannot be built until they are resolved. */
export interface RepairOutcome {
  readonly movedOut: number;
  readonly duplicatesDeleted: number;
  readonly conflicts: number;
  readonly indexesBuilt: readonly string[];
}

type Stored = Document & { _id: ObjectId; owner: string; id: unknown; slot: number };

/** Documents sharing `key`, by `_id`: one pass sorted by (owner, key, _id), a group at a time (FerretDB has no $push). */
async function* sharing(collection: Collection<Stored>, key: 'id' | 'slot'): AsyncGenerator<Stored[]> {
  let group: Stored[] = [];
  const cursor = collection.find({}, { sort: { owner: 1, [key]: 1, _id: 1 }, allowDiskUse: true, batchSize: 10_000 });
  for await (const doc of cursor) {
    const first = group[0];
    if (first !== undefined && (first.owner !== doc.owner || first[key] !== doc[key])) {
      if (group.length > 1) yield group;
      group = [];
    }
    group.push(doc);
  }
  if (group.length > 1) yield group;
}

/** The plant a document holds, as JSON (ids as strings): what a copy is compared by, and what is printed. */
const fields = ({ _id, owner, slot, ...plant }: Stored): string =>
  JSON.stringify(plant, (_, v: unknown) => (typeof v === 'bigint' ? v.toString() : v));

export const repairStorage = async (options: RepairOptions): Promise<RepairOutcome> => {
  const client = new MongoClient(options.uri, { useBigInt64: true, serverSelectionTimeoutMS: 10_000 });
  try {
    const collection = client.db(options.db).collection<Stored>(COLLECTION);
    const plain = collection as unknown as Collection<Document>;
    let missing = await missingIndexes(plain);
    if (missing.length === 0) {
      options.report('both unique indexes are in place: nothing to repair');
      return { movedOut: 0, duplicatesDeleted: 0, conflicts: 0, indexesBuilt: [] };
    }
    options.report(`missing unique indexes: ${missing.map((s) => s.name).join(', ')}`);

    let duplicatesDeleted = 0;
    let conflicts = 0;
    if (missing.some((s) => 'id' in s.key)) {
      for await (const [first, ...later] of sharing(collection, 'id')) {
        if (first === undefined) continue;
        for (const doc of later) {
          const same = fields(doc) === fields(first);
          if (!same) {
            const what = `owner ${doc.owner}: ${fields(first)} (kept) and ${fields(doc)}`;
            options.report(options.keepFirst ? `deleting the later plant of ${what}` : `different plants of ${what}`);
            conflicts += options.keepFirst ? 0 : 1;
            if (!options.keepFirst) continue;
          }
          duplicatesDeleted += (await collection.deleteOne({ _id: doc._id })).deletedCount;
        }
      }
    }

    let movedOut = 0;
    if (missing.some((s) => 'slot' in s.key)) {
      const shared = await sharing(collection, 'slot').next();
      if (shared.done !== true) {
        options.report(`waiting ${options.noticeMs} ms for every running service to notice the missing slot index`);
        await new Promise((resolve) => setTimeout(resolve, options.noticeMs));
        if ((await missingIndexes(plain)).every((s) => !('slot' in s.key))) {
          throw new Error('the slot index was built meanwhile: run the repair again');
        }
      }
      for await (const [, ...later] of sharing(collection, 'slot')) {
        for (const doc of later) {
          const to = OUTSIDE_FROM + Math.floor(Math.random() * OUTSIDE_FROM);
          movedOut += (await collection.updateOne({ _id: doc._id, slot: doc.slot }, { $set: { slot: to } }))
            .modifiedCount;
        }
      }
      options.report(`${movedOut} plants that shared a slot moved outside (they count, and move back in)`);
    }

    const indexesBuilt: string[] = [];
    missing = await missingIndexes(plain);
    for (const spec of INDEX_SPECS.filter((s) => missing.includes(s))) {
      if ('id' in spec.key && conflicts > 0) continue;
      await plain.createIndex(spec.key, { unique: true, name: spec.name });
      indexesBuilt.push(spec.name);
    }
    options.report(
      conflicts > 0
        ? 'repair incomplete: different plants share an id; run again with --keep-first to keep the first written'
        : `repair done: ${duplicatesDeleted} copies deleted, ${movedOut} moved outside, built ${indexesBuilt.join(', ')}`,
    );
    return { movedOut, duplicatesDeleted, conflicts, indexesBuilt };
  } finally {
    await client.close();
  }
};
