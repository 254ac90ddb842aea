import * as E from 'fp-ts/lib/Either.js';
import { pipe } from 'fp-ts/lib/function.js';
import * as TE from 'fp-ts/lib/TaskEither.js';
import * as t from 'io-ts';
import { MongoClient, ObjectId, type Collection, type WriteConcernSettings } from 'mongodb';
import { storageUnavailable, type StorageUnavailable } from '../../../application/errors.js';
import { NO_PLANT_LIMIT, type PlantPage, type PlantRepository } from '../../../application/ports/plant-repository.js';
import type { Logger } from '../../../application/ports/logger.js';
import { PlantId, PlantName, PlantTag, plant, type Plant } from '../../../domain/plant.js';
import { isUnavailable, writeConcernUnavailable } from './mongodb-errors.js';
import { attemptOfKeyPattern, ownerSlots, probeSlot, type SlotAttempt } from './owner-slots.js';
import { INDEX_NAME, IndexUnusable, SENTINEL_ID, SENTINEL_OWNER, uniqueIndex } from './unique-index.js';

export { INDEX_NAME };

export interface MongoOptions {
  readonly uri: string;
  readonly db: string;
  /** Bound on every call: server selection, connection, socket, server-side time, and the adapter's own deadline. */
  readonly timeoutMs: number;
  readonly writeConcern: 'majority' | number;
  readonly journal: boolean;
  readonly logger: Logger;
  /** How often a running service checks that the unique index is still there (default 30 s). */
  readonly indexRecheckMs?: number;
  /** First wait before asking again for an index the server refused; doubles up to 60 s (default 1 s). */
  readonly indexRetryMs?: number;
}

/**
 * The stored document: one per plant, unique on (owner, id), `id` a BSON int64. `_id` is the driver's ObjectId, new
 * for every create: a delete names the exact document it decided to delete by `_id`, so a delete that reaches the
 * server late can never remove a plant created again under that id afterwards (which has another `_id`). A derived
 * `_id` would not do: FerretDB deletes and updates by first reading the matching `_id`s, then writing by `_id`.
 */
interface PlantDocument {
  _id?: ObjectId;
  owner: string;
  id: bigint;
  name: string;
  tag?: string;
  /** The owner's room this plant holds (owner-slots.ts); unique per owner. */
  slot?: number;
}

export const COLLECTION = 'plants';
const DUPLICATE_KEY = 11000;

/** What the server answers to an `insert` command (write errors and write concern errors are in the answer). */
const InsertReply = t.intersection([
  t.type({ n: t.number }),
  t.partial({
    writeErrors: t.array(
      t.intersection([t.type({ index: t.number, code: t.number }), t.partial({ keyPattern: t.unknown })]),
    ),
    writeConcernError: t.type({ code: t.number }),
  }),
]);

/** The write was applied but the write concern did not confirm it (in time): outcome unknown, unless misconfigured. */
class WriteConcernUnconfirmed extends Error {
  constructor(readonly code: number) {
    super(`write concern not confirmed (code ${code})`);
  }
}

/** Anything read back is decoded again: a document that breaks a domain rule is a fault, not a plant. */
const StoredPlant = t.intersection([
  t.type({ id: t.union([t.bigint, t.number]), name: t.string }),
  t.partial({ tag: t.union([t.string, t.undefined]) }),
]);

const decodeStored = (doc: unknown): Plant => {
  const raw = StoredPlant.decode(doc);
  if (E.isLeft(raw)) throw new Error('a stored plant document has an unexpected shape');
  const { id, name, tag } = raw.right;
  const plantId = PlantId.fromBigInt('id', typeof id === 'bigint' ? id : BigInt(id));
  const plantName = PlantName.from('name', name);
  const plantTag = tag === undefined ? E.right(undefined) : PlantTag.from('tag', tag);
  if (E.isLeft(plantId) || E.isLeft(plantName) || E.isLeft(plantTag))
    throw new Error('a stored plant breaks a domain rule');
  return plant(plantId.right, plantName.right, plantTag.right);
};

/** The adapter's own bound on a call, for a driver that does not give up in time. */
class DeadlineExceeded extends Error {}

/** One call under its deadline: `signal` aborts the driver's reads at the deadline, `check` stops further steps. */
interface Call {
  readonly signal: AbortSignal;
  /** Throws once the deadline has passed: a step after it is never sent (its answer would go to nobody). */
  readonly check: () => void;
}

const unavailable = (e: unknown): boolean =>
  e instanceof DeadlineExceeded ||
  e instanceof IndexUnusable ||
  (e instanceof WriteConcernUnconfirmed && writeConcernUnavailable(e.code)) ||
  isUnavailable(e);

/**
 * Runs a driver call under a hard deadline and turns unavailability into StorageUnavailable. At the deadline the
 * caller is answered 503 ("outcome unknown") while a command already sent may still reach the server, and no further
 * command of the call is sent. Landing late is harmless by construction: a late delete removes only the document it
 * decided on (see `remove`), a late insert stores the plant it was asked to store, as an identical retry would.
 */
const guarded =
  <A>(timeoutMs: number, run: (call: Call) => Promise<A>): TE.TaskEither<StorageUnavailable, A> =>
  async () => {
    const controller = new AbortController();
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        const exceeded = new DeadlineExceeded('storage deadline exceeded');
        controller.abort(exceeded);
        reject(exceeded);
      }, timeoutMs);
    });
    const call: Call = {
      signal: controller.signal,
      check: () => {
        if (controller.signal.aborted) throw new DeadlineExceeded('storage deadline exceeded');
      },
    };
    try {
      return E.right(await Promise.race([run(call), deadline]));
    } catch (e) {
      if (unavailable(e)) return E.left(storageUnavailable);
      throw e;
    } finally {
      clearTimeout(timer);
    }
  };

/** How long close() waits for the driver before it lets go (a hanging server must not hold shutdown). */
const CLOSE_BOUND_MS = 1000;

export interface MongodbPlantRepository {
  readonly repository: PlantRepository;
  readonly close: () => Promise<void>;
  /** The driver's client, for its monitoring events (bootstrap logs the reason of a failed heartbeat). */
  readonly client: MongoClient;
}

/**
 * Plants in MongoDB (STORAGE=mongodb). A page is an index walk on (owner, id): owner equal, id after the cursor,
 * sorted by id, limit + 1, never a skip. Writes wait for the configured write concern (majority, journaled, by
 * default) before they resolve. The unique index is created before the first write; when the server is down at
 * start-up the service still starts, reports not ready, and creates the index when the server answers.
 */
export const mongodbPlantRepository = (options: MongoOptions): MongodbPlantRepository => {
  const { timeoutMs, logger } = options;
  const client = new MongoClient(options.uri, {
    useBigInt64: true,
    serverSelectionTimeoutMS: timeoutMs,
    connectTimeoutMS: timeoutMs,
    socketTimeoutMS: timeoutMs,
    waitQueueTimeoutMS: timeoutMs,
    heartbeatFrequencyMS: 2000,
    minHeartbeatFrequencyMS: 200,
    retryReads: true,
    appName: 'plant-store',
  });
  const db = client.db(options.db);
  const collection: Collection<PlantDocument> = db.collection<PlantDocument>(COLLECTION);
  /** The same collection, untyped: it also holds the unique index's sentinel and, briefly, probes. */
  const documents = db.collection(COLLECTION);
  const index = uniqueIndex(documents, {
    logger,
    namespace: `${options.db}.${COLLECTION}`,
    retryMinMs: options.indexRetryMs ?? 1000,
    retryMaxMs: 60_000,
    recheckMs: options.indexRecheckMs ?? 30_000,
  });
  const writeConcern: WriteConcernSettings = {
    w: options.writeConcern,
    journal: options.journal,
    wtimeoutMS: timeoutMs,
  };
  const maxTimeMS = timeoutMs;

  let connected: Promise<unknown> | undefined;
  /**
   * Connects once (a failed attempt is forgotten so the next call tries again), then makes sure of the unique index.
   * The explicit connect matters: when the driver's implicit first connect fails, its topology stays closed and
   * every later call fails with MongoTopologyClosedError even after the server is back. Once connected, the driver
   * reconnects by itself.
   */
  const ensureReady = async (): Promise<void> => {
    connected ??= client.connect().catch((e: unknown) => {
      connected = undefined;
      throw e;
    });
    await connected;
    await index.ensure();
  };

  // The owner's bound: each plant holds a slot below it, unique per owner (owner-slots.ts).
  const slots = ownerSlots(documents, maxTimeMS, decodeStored);

  const repository: PlantRepository = {
    insert: (owner, p, maxPlants = NO_PLANT_LIMIT) =>
      pipe(
        guarded(timeoutMs, async (call) => {
          await ensureReady();
          /**
           * One attempt to store the plant in a slot: the plant, then a probe that only the unique index on (owner,
           * id) refuses (see unique-index.ts), in one ordered command (a raw `insert`, so that its answer says exactly
           * which document was refused, why, and by which index).
           */
          const tryInsert = async (slot: number): Promise<SlotAttempt> => {
            call.check();
            const _id = new ObjectId();
            const doc: PlantDocument =
              p.tag === undefined
                ? { _id, owner, id: p.id, name: p.name, slot }
                : { _id, owner, id: p.id, name: p.name, tag: p.tag, slot };
            const probe = {
              _id: new ObjectId(),
              owner: SENTINEL_OWNER,
              id: SENTINEL_ID,
              probe: true,
              slot: probeSlot(),
            };
            const answer = InsertReply.decode(
              await db.command({
                insert: COLLECTION,
                documents: [doc, probe],
                ordered: true,
                writeConcern: { w: options.writeConcern, j: options.journal, wtimeout: timeoutMs },
                maxTimeMS,
              }),
            );
            if (E.isLeft(answer)) throw new Error('the server answered an insert with an unexpected shape');
            const { writeErrors = [], writeConcernError } = answer.right;
            if (writeConcernError !== undefined) throw new WriteConcernUnconfirmed(writeConcernError.code);
            const [refused, ...others] = writeErrors;
            if (refused !== undefined && (refused.code !== DUPLICATE_KEY || others.length > 0)) {
              throw new Error(`the server refused an insert (code ${refused.code})`);
            }
            // The plant's own key or its slot is taken (its `_id` is new, so only a unique index can say so).
            if (refused?.index === 0) return attemptOfKeyPattern(refused.keyPattern);
            if (refused?.index === 1) return 'inserted'; // the probe was refused: the index guarded the insert
            // The probe was stored: no unique index guarded this insert (the collection was dropped under the service
            // and made again by an insert, or the index was dropped). The insert counts once the index is back (it
            // could not be built over a duplicate); if it cannot be, the insert is taken back and the caller gets 503.
            await documents.deleteOne({ _id: probe._id }, { writeConcern, maxTimeMS });
            if (await index.confirm()) return 'inserted';
            await collection.deleteOne({ _id }, { writeConcern, maxTimeMS });
            throw new IndexUnusable('the unique index could not be put back after an unguarded insert');
          };
          return slots.insert(owner, maxPlants, p, tryInsert, Date.now() + timeoutMs);
        }),
        // Concurrent creates of this owner kept taking the slots it chose: nothing stored, safe to retry.
        TE.flatMap((outcome) => (outcome === undefined ? TE.left(storageUnavailable) : TE.right(outcome))),
      ),

    page: (owner, after, limit) =>
      guarded(timeoutMs, async (call): Promise<PlantPage> => {
        await ensureReady();
        const filter = after === undefined ? { owner } : { owner, id: { $gt: after } };
        const docs = await collection
          .find(filter, { projection: { _id: 0, id: 1, name: 1, tag: 1 }, maxTimeMS, signal: call.signal })
          .sort({ id: 1 })
          .limit(limit + 1)
          .toArray();
        const more = docs.length > limit;
        return { plants: (more ? docs.slice(0, limit) : docs).map(decodeStored), more };
      }),

    // Two steps: find the exact document stored now, then delete that document (by its `_id`) and no other. A delete
    // held up on the way and sent before the deadline can only remove the plant that existed when it was decided; a
    // plant created again under that id has another `_id` and is out of its reach. No step is sent after the deadline.
    remove: (owner, id) =>
      guarded(timeoutMs, async (call) => {
        await ensureReady();
        call.check();
        const found = await collection.findOne(
          { owner, id },
          { projection: { _id: 1 }, maxTimeMS, signal: call.signal },
        );
        if (found === null) return false;
        call.check();
        const result = await collection.deleteOne({ _id: found._id }, { writeConcern, maxTimeMS });
        // 0: another delete took that plant between our two steps; it is gone, as after a delete ordered after that one.
        return result.deletedCount === 1;
      }),

    ping: guarded(timeoutMs, async (call) => {
      await ensureReady();
      await db.command({ ping: 1 }, { signal: call.signal });
      await index.recheck();
    }),
  };

  // Start connecting now, without making start-up wait on it; failures show in /readyz and as 503s. An index the
  // server refuses has logged its own line.
  void ensureReady().catch((e: unknown) => {
    if (e instanceof IndexUnusable) return;
    logger.warn({ err: e instanceof Error ? e.message : String(e) }, 'storage not reachable yet; will retry on demand');
  });

  // A running service notices a dropped collection (and its index) without waiting for a request to ask.
  const recheckTimer = setInterval(() => void index.recheck().catch(() => undefined), options.indexRecheckMs ?? 30_000);
  recheckTimer.unref();

  return {
    repository,
    client,
    // Bounded: with a server that hangs, the driver's close would wait for its own timeouts (ending sessions on the
    // server). Operations still in flight fail with the driver's closed-client errors, which are 503s.
    close: async () => {
      clearInterval(recheckTimer);
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        client.close().catch(() => undefined),
        new Promise<void>((resolve) => {
          timer = setTimeout(resolve, Math.min(CLOSE_BOUND_MS, timeoutMs));
        }),
      ]);
      clearTimeout(timer);
    },
  };
};
