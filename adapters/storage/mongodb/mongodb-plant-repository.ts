import * as E from 'fp-ts/lib/Either.js';
import { pipe } from 'fp-ts/lib/function.js';
import * as TE from 'fp-ts/lib/TaskEither.js';
import * as t from 'io-ts';
import { MongoClient, type Collection, type ObjectId, type WriteConcernSettings } from 'mongodb';
import { storageUnavailable, type StorageUnavailable } from '../../../application/errors.js';
import { NO_PLANT_LIMIT, type PlantPage, type PlantRepository } from '../../../application/ports/plant-repository.js';
import type { Logger } from '../../../application/ports/logger.js';
import { PlantId, PlantName, PlantTag, plant, type Plant } from '../../../domain/plant.js';
import { isUnavailable } from './mongodb-errors.js';
import { FREED, MARKERS, mongoSlotStore, ownerSlots } from './owner-slots.js';
import { INDEX_NAME, INDEX_SPECS, IndexUnusable, SLOT_INDEX_NAME, uniqueIndexes } from './indexes.js';

export { INDEX_NAME, INDEX_SPECS, SLOT_INDEX_NAME };

export interface MongoOptions {
  readonly uri: string;
  readonly db: string;
  /** Bound on every call: server selection, connection, socket, server-side time, and the adapter's own deadline. */
  readonly timeoutMs: number;
  readonly writeConcern: 'majority' | number;
  readonly journal: boolean;
  readonly logger: Logger;
  /** How often a running service checks that the unique indexes are still there (default 30 s). */
  readonly indexRecheckMs?: number;
  /** First wait before asking again for an index the server refused; doubles up to 60 s (default 1 s). */
  readonly indexRetryMs?: number;
  /** Heap bytes for what the process remembers of owners' slots (owner-slots.ts; default 64 MiB). */
  readonly slotCacheBytes?: number;
  /** Longest a 403 may rest on an old load of the owner (default 1 s; see owner-slots.ts). */
  readonly fullRecheckMs?: number;
  /**
   * Bound on one load of an owner's slots (default 30 s). A load outlives the request that started it: on FerretDB's
   * SQLite handler it reads the whole collection, which can take longer than a request may wait, and the requests
   * after it need its answer. It runs on a connection pool of its own, whose socket timeout is this bound.
   */
  readonly slotLoadTimeoutMs?: number;
  /** Emit the driver's command monitoring events on `client` (tests count round trips with them). */
  readonly monitorCommands?: boolean;
}

/**
 * The stored document: one per plant, unique on (owner, id) and on (owner, slot), `id` a BSON int64. `_id` is the
 * driver's ObjectId, new for every create: a delete names the exact document it decided to delete by `_id`, so a
 * delete that reaches the server late can never remove a plant created again under that id afterwards (which has
 * another `_id`). A derived `_id` would not do: FerretDB deletes and updates by first reading the matching `_id`s,
 * then writing by `_id`.
 */
type PlantDocument = Plant & {
  _id?: ObjectId;
  owner: string;
  /** The owner's room this plant holds (owner-slots.ts); unique per owner. */
  slot?: number;
};

/** A plant read back: the document without the fields the adapter keeps beside it. */
const PLANT_FIELDS = { _id: 0, owner: 0, slot: 0 } as const;

export const COLLECTION = 'plants';

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
  return plant({ id: plantId.right, name: plantName.right, tag: plantTag.right });
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
  e instanceof DeadlineExceeded || e instanceof IndexUnusable || isUnavailable(e);

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
  /** The client that loads owners' slots (its own pool, see `slotLoadTimeoutMs`), for command monitoring. */
  readonly slotClient: MongoClient;
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
    // Creates, deletes and slot moves are insertOne/deleteOne/updateOne: on a replica set the driver retries each
    // once, transparently, across an election (the server recognizes a retry of a write it already applied).
    retryWrites: true,
    monitorCommands: options.monitorCommands ?? false,
    appName: 'plant-store',
  });
  const db = client.db(options.db);
  const collection: Collection<PlantDocument> = db.collection<PlantDocument>(COLLECTION);
  const loadTimeoutMs = options.slotLoadTimeoutMs ?? 30_000;
  const loadClient = new MongoClient(options.uri, {
    useBigInt64: true,
    serverSelectionTimeoutMS: timeoutMs,
    connectTimeoutMS: timeoutMs,
    socketTimeoutMS: loadTimeoutMs,
    waitQueueTimeoutMS: timeoutMs,
    maxPoolSize: 4,
    retryReads: true,
    monitorCommands: options.monitorCommands ?? false,
    appName: 'plant-store-slots',
  });
  let loadConnected: Promise<unknown> | undefined;
  const loadCollection = loadClient.db(options.db).collection(COLLECTION);
  const writeConcern: WriteConcernSettings = {
    w: options.writeConcern,
    journal: options.journal,
    wtimeoutMS: timeoutMs,
  };
  const maxTimeMS = timeoutMs;

  const slots = ownerSlots(
    mongoSlotStore({
      plants: db.collection(COLLECTION),
      loadPlants: async () => {
        // Connected explicitly, as the main client is (see ensureReady).
        loadConnected ??= loadClient.connect().catch((e: unknown) => {
          loadConnected = undefined;
          throw e;
        });
        await loadConnected;
        return loadCollection;
      },
      markers: db.collection(MARKERS),
      freed: db.collection(FREED),
      writeConcern,
      maxTimeMS,
      loadTimeoutMs,
      plantFields: PLANT_FIELDS,
    }),
    { budgetBytes: options.slotCacheBytes ?? 64 * 1024 * 1024, fullRecheckMs: options.fullRecheckMs ?? 1000 },
  );

  const index = uniqueIndexes(db.collection(COLLECTION), {
    logger,
    namespace: `${options.db}.${COLLECTION}`,
    retryMinMs: options.indexRetryMs ?? 1000,
    retryMaxMs: 60_000,
    recheckMs: options.indexRecheckMs ?? 30_000,
    writeConcern,
    onSlotsChanged: slots.forgetAll,
    markers: db.collection(MARKERS),
  });

  let connected: Promise<unknown> | undefined;
  /**
   * Connects once (a failed attempt is forgotten so the next call tries again), then makes sure of the unique indexes.
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

  const repository: PlantRepository = {
    insert: (owner, p, maxPlants = NO_PLANT_LIMIT) =>
      pipe(
        guarded(timeoutMs, async (call) => {
          await ensureReady();
          return slots.insert(owner, maxPlants, p.id, p, call.check, Date.now() + timeoutMs);
        }),
        // Concurrent creates of this owner kept taking the slots it chose: nothing stored, safe to retry.
        TE.flatMap((outcome) =>
          outcome === undefined
            ? TE.left(storageUnavailable)
            : TE.right(outcome._tag === 'Exists' ? { ...outcome, stored: decodeStored(outcome.stored) } : outcome),
        ),
      ),

    page: (owner, after, limit) =>
      guarded(timeoutMs, async (call): Promise<PlantPage> => {
        await ensureReady();
        const filter = after === undefined ? { owner } : { owner, id: { $gt: after } };
        const docs = await collection
          .find(filter, { projection: PLANT_FIELDS, maxTimeMS, signal: call.signal })
          .sort({ id: 1 })
          .limit(limit + 1)
          .batchSize(limit + 1) // the whole page in the first reply: one round trip, never a getMore
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
          { projection: { _id: 1, slot: 1 }, maxTimeMS, signal: call.signal },
        );
        if (found === null) return false;
        call.check();
        const result = await collection.deleteOne({ _id: found._id }, { writeConcern, maxTimeMS });
        // 0: another delete took that plant between our two steps; it is gone, as after a delete ordered after that one.
        if (result.deletedCount !== 1) return false;
        // The room is free: here at once, and a hint for the other processes (a failure there loses only the hint).
        await slots.freed(owner, found.slot).catch(() => undefined);
        return true;
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

  // A running service notices a dropped index or collection within indexRecheckMs, without a request asking.
  const recheckTimer = setInterval(() => {
    void index.recheck(true).catch(() => undefined);
    void slots.refresh().catch(() => undefined);
  }, options.indexRecheckMs ?? 30_000);
  recheckTimer.unref();

  return {
    repository,
    client,
    slotClient: loadClient,
    // Bounded: with a server that hangs, the driver's close would wait for its own timeouts (ending sessions on the
    // server). Operations still in flight fail with the driver's closed-client errors, which are 503s.
    close: async () => {
      clearInterval(recheckTimer);
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        Promise.all([client.close().catch(() => undefined), loadClient.close().catch(() => undefined)]),
        new Promise<void>((resolve) => {
          timer = setTimeout(resolve, Math.min(CLOSE_BOUND_MS, timeoutMs));
        }),
      ]);
      clearTimeout(timer);
    },
  };
};
