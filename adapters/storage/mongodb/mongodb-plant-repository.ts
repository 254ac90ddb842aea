import { randomInt } from 'node:crypto';
import * as E from 'fp-ts/lib/Either.js';
import type * as TE from 'fp-ts/lib/TaskEither.js';
import {
  MongoClient,
  MongoServerError,
  ObjectId,
  type Collection,
  type Filter,
  type MatchKeysAndValues,
  type WriteConcernSettings,
} from 'mongodb';
import { storageUnavailable, type StorageUnavailable } from '../../../application/errors.js';
import { NO_PLANT_LIMIT, type PlantPage, type PlantRepository } from '../../../application/ports/plant-repository.js';
import type { Logger } from '../../../application/ports/logger.js';
import type { Plant, PlantId } from '../../../domain/plant.js';
import { isDuplicateKey, isUnavailable, isWriteConflict } from './mongodb-errors.js';
import { decodeStored } from './plant-document.js';
import { attemptOfKeyPattern, ownerSlots, type SlotStore } from './owner-slots.js';
import { outsidePlants, type OutsideStore } from './outside-plants.js';
import { INDEX_NAME, INDEX_SPECS, IndexUnusable, SLOT_INDEX_NAME, uniqueIndexes, type IndexNeed } from './indexes.js';

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
  /** Heap bytes for what the process knows of owners' slots (owner-slots.ts; MONGODB_SLOTS_MEMORY_BYTES, 64 MiB). */
  readonly slotCacheBytes?: number;
  /** Least time between two loads of an owner that looks full (default 1 s). */
  readonly fullRecheckMs?: number;
  /**
   * The bound this service creates under (MAX_PLANTS_PER_OWNER), when there is one: its sweep for outside plants, or
   * the record of the last one (outside-plants.ts), starts with the process rather than with its first create.
   */
  readonly maxPlantsPerOwner?: number;
  /**
   * Bound on one load of an owner's slots (default 30 s). A load outlives the request that started it: on FerretDB's
   * SQLite handler it reads the whole collection, which can take longer than a request may wait, and the requests
   * after it need its answer. It runs on a connection pool of its own, whose socket timeout is this bound.
   */
  readonly slotLoadTimeoutMs?: number;
  /**
   * Bound on one step of the indexes' upkeep (indexes.ts: one round trip of an index build or of the mend's scan;
   * default 120 s). The upkeep runs in the background on a connection pool of its own, whose socket timeout is this.
   */
  readonly indexStepMs?: number;
  /** Least time between two reads of the bounds registry (outside-plants.ts; default 1 s). */
  readonly boundsViewMs?: number;
  /** A bound not announced for this long is no longer in force (outside-plants.ts; default 60 s). */
  readonly boundsExpiryMs?: number;
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
/** The bounds processes create under (outside-plants.ts): `{_id: "<bound>" | "none", at}`. */
export const BOUNDS_COLLECTION = 'plants_bounds';
/** Owners whose outside plants a process is moving in right now (owner-slots.ts): `{_id: owner, at}`. */
export const LOCKS_COLLECTION = 'plants_locks';
/** The last sweep for outside plants under each bound (outside-plants.ts): `{_id: "<bound>", startedAt, slotIndex, owners}`. */
export const SWEEPS_COLLECTION = 'plants_sweeps';
/** A lock this old was left by a process that died holding it (moving an owner's plants takes milliseconds). */
const LOCK_STALE_MS = 30_000;
/** Tries of one slot move that collides with another process's (see `retryConflicts`). */
const MOVE_ATTEMPTS = 5;

/**
 * Sends an update again when it collided with another process's update of the same documents (on FerretDB/PostgreSQL
 * a deadlock, which PostgreSQL settles by failing one side): nothing changed, and the same update sent again goes through.
 */
const retryConflicts = async <A>(send: () => Promise<A>): Promise<A> => {
  for (let attempt = 1; ; attempt++) {
    try {
      return await send();
    } catch (e) {
      if (!isWriteConflict(e) || attempt >= MOVE_ATTEMPTS) throw e;
      await new Promise((resolve) => setTimeout(resolve, randomInt(5, 30)));
    }
  }
};

/** The adapter's own bound on a call, for a driver that does not give up in time. */
class DeadlineExceeded extends Error {}

/**
 * One call under its deadline: `signal` aborts the driver's reads at the deadline, `check` stops further steps.
 * The signal is made only when a step asks for it (a page, a delete, a wait for an index): Node's AbortController is
 * dear to make (about 9 µs of a create's CPU, measured beside a bare insertOne; see docs/storage.md), and a create in
 * the steady state passes none to the driver.
 */
class Call {
  private expired: DeadlineExceeded | undefined;
  private controller: AbortController | undefined;

  get signal(): AbortSignal {
    if (this.controller === undefined) {
      this.controller = new AbortController();
      if (this.expired !== undefined) this.controller.abort(this.expired);
    }
    return this.controller.signal;
  }

  /** Throws once the deadline has passed: a step after it is never sent (its answer would go to nobody). */
  readonly check = (): void => {
    if (this.expired !== undefined) throw new DeadlineExceeded('storage deadline exceeded');
  };

  expire(reason: DeadlineExceeded): void {
    this.expired = reason;
    this.controller?.abort(reason);
  }
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
    const call = new Call();
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        const exceeded = new DeadlineExceeded('storage deadline exceeded');
        call.expire(exceeded);
        reject(exceeded);
      }, timeoutMs);
    });
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
  /** What every client of the adapter shares: exact int64s, reaching the server within the bound, monitoring. */
  const common = {
    useBigInt64: true,
    serverSelectionTimeoutMS: timeoutMs,
    connectTimeoutMS: timeoutMs,
    retryReads: true,
    monitorCommands: options.monitorCommands ?? false,
  } as const;
  const client = new MongoClient(options.uri, {
    ...common,
    socketTimeoutMS: timeoutMs,
    waitQueueTimeoutMS: timeoutMs,
    heartbeatFrequencyMS: 2000,
    minHeartbeatFrequencyMS: 200,
    // Creates, deletes and slot moves are insertOne/deleteOne/updateOne: on a replica set the driver retries each
    // once, transparently, across an election (the server recognizes a retry of a write it already applied).
    retryWrites: true,
    appName: 'plant-store',
  });
  const db = client.db(options.db);
  const collection: Collection<PlantDocument> = db.collection<PlantDocument>(COLLECTION);
  const loadTimeoutMs = options.slotLoadTimeoutMs ?? 30_000;
  const loadClient = new MongoClient(options.uri, {
    ...common,
    socketTimeoutMS: loadTimeoutMs,
    waitQueueTimeoutMS: timeoutMs,
    maxPoolSize: 4,
    appName: 'plant-store-slots',
  });
  const stepMs = options.indexStepMs ?? 120_000;
  const upkeepClient = new MongoClient(options.uri, {
    ...common,
    socketTimeoutMS: stepMs,
    waitQueueTimeoutMS: stepMs,
    maxPoolSize: 4,
    retryWrites: true,
    appName: 'plant-store-indexes',
  });
  let upkeepConnected: Promise<unknown> | undefined;
  let loadConnected: Promise<unknown> | undefined;
  const loadCollection = loadClient.db(options.db).collection<PlantDocument>(COLLECTION);
  const writeConcern: WriteConcernSettings = {
    w: options.writeConcern,
    journal: options.journal,
    wtimeoutMS: timeoutMs,
  };
  const maxTimeMS = timeoutMs;

  /** The plant stored under that owner and id, if any: one indexed lookup. */
  const findStored = async (owner: string, id: PlantId): Promise<Plant | undefined> => {
    const doc = await collection.findOne({ owner, id }, { projection: PLANT_FIELDS, maxTimeMS });
    return doc === null ? undefined : decodeStored(doc);
  };

  const locks = db.collection<{ _id: string; at: Date }>(LOCKS_COLLECTION);
  /** Connects the loads' pool explicitly, as the main client is (see ensureReady). */
  const connectLoads = () =>
    (loadConnected ??= loadClient.connect().catch((e: unknown) => {
      loadConnected = undefined;
      throw e;
    }));
  const slotStore: SlotStore = {
    load: async (owner, max) => {
      await connectLoads();
      return (
        loadCollection
          // One reply for an owner within its bound (no getMore); an owner above it (a lowered bound) takes more.
          .find(
            { owner },
            { projection: { _id: 1, slot: 1 }, batchSize: Math.min(max + 1, 100_000), maxTimeMS: loadTimeoutMs },
          )
          .toArray()
      );
    },
    // An index seek on (owner, slot) on MongoDB: one key at most is read. On the loads' pool (4 connections): on FerretDB
    // it is a scan of the collection, and the first creates of many owners while a first sweep runs would otherwise
    // crowd the server with scans (the sweep's among them) until every one of them ran out of time.
    hasOutside: async (owner, max) => {
      await connectLoads();
      return (
        (await loadCollection.findOne({ owner, slot: { $gte: max } }, { projection: { _id: 1 }, maxTimeMS })) !== null
      );
    },
    insert: async (owner, p, slot) => {
      const doc: PlantDocument = { _id: new ObjectId(), owner, slot, ...p };
      try {
        await collection.insertOne(doc, { writeConcern, maxTimeMS });
        return 'inserted';
      } catch (e) {
        if (isDuplicateKey(e)) return attemptOfKeyPattern(e instanceof MongoServerError ? e.keyPattern : undefined);
        throw e;
      }
    },
    unstore: async (owner, p, slot) => {
      await collection.deleteOne({ owner, slot, id: p.id }, { writeConcern, maxTimeMS });
    },
    find: (owner, p) => findStored(owner, p.id),
    move: (moves) =>
      Promise.all(
        moves.map(async ({ _id, slot }) => {
          try {
            await retryConflicts(() =>
              collection.updateOne({ _id: _id as ObjectId }, { $set: { slot } }, { writeConcern, maxTimeMS }),
            );
            return true; // moved, or deleted meanwhile: either way no longer outside
          } catch (e) {
            // The slot is taken: not moved (a move is a hint, the index keeps the bound).
            if (isDuplicateKey(e)) return false;
            throw e;
          }
        }),
      ),
    compact: async (owner, from, to) => {
      try {
        const result = await retryConflicts(() =>
          collection.updateOne({ owner, slot: from }, { $set: { slot: to } }, { writeConcern, maxTimeMS }),
        );
        return result.matchedCount === 0 ? 'empty' : 'moved';
      } catch (e) {
        if (isDuplicateKey(e)) return 'taken';
        throw e;
      }
    },
    lock: async (owner) => {
      for (let attempt = 0; attempt < 2; attempt++) {
        try {
          await locks.insertOne({ _id: owner, at: new Date() }, { writeConcern, maxTimeMS });
          return true;
        } catch (e) {
          if (!isDuplicateKey(e)) throw e;
        }
        // Held: by a process at work, or left by one that died holding it (then taken over once it is old enough).
        const held = await locks.findOne({ _id: owner }, { maxTimeMS });
        if (held === null) continue;
        if (Date.now() - held.at.getTime() < LOCK_STALE_MS) return false;
        await locks.deleteOne({ _id: owner, at: held.at }, { writeConcern, maxTimeMS });
      }
      return false;
    },
    unlock: async (owner) => {
      await locks.deleteOne({ _id: owner }, { writeConcern, maxTimeMS });
    },
  };
  const bounds = db.collection<{ _id: string; at: Date }>(BOUNDS_COLLECTION);
  const sweepRecords = db.collection<{ _id: string; startedAt: Date; slotIndex: string; owners: string[] }>(
    SWEEPS_COLLECTION,
  );
  const upkeepCollection = upkeepClient.db(options.db).collection<PlantDocument>(COLLECTION);
  const connectUpkeep = () =>
    (upkeepConnected ??= upkeepClient.connect().catch((e: unknown) => {
      upkeepConnected = undefined;
      throw e;
    }));
  /** Sets `fields` on the document `_id`, made if missing. */
  const upsert = async <T extends { _id: string }>(
    on: Collection<T>,
    _id: string,
    fields: MatchKeysAndValues<T>,
  ): Promise<void> => {
    const filter = { _id } as Filter<T>;
    try {
      await on.updateOne(filter, { $set: fields }, { upsert: true, writeConcern, maxTimeMS });
    } catch (e) {
      // Two first upserts at once: the one that lost finds the document in place, and updates it.
      if (!isDuplicateKey(e)) throw e;
      await on.updateOne(filter, { $set: fields }, { writeConcern, maxTimeMS });
    }
  };
  const budgetBytes = options.slotCacheBytes ?? 64 * 1024 * 1024;
  const outsideStore: OutsideStore = {
    announce: (bound) => upsert(bounds, bound, { at: new Date() }),
    announced: async () =>
      (await bounds.find({}, { maxTimeMS }).toArray()).map((d) => ({ bound: d._id, at: d.at.getTime() })),
    outsideOwners: async (max, cap) => {
      await connectUpkeep();
      const owners = new Set<string>();
      // A scan of the collection on every server (no index starts with `slot`), once per process start and per change
      // of the bounds in force, in the background. (On MongoDB a hint of the (owner, slot) index would let the scan seek
      // from owner to owner; FerretDB's handling of hints is not tested here, so none is sent.)
      const cursor = upkeepCollection.find(
        { slot: { $gte: max } },
        { projection: { _id: 0, owner: 1 }, batchSize: 10_000, maxTimeMS: stepMs },
      );
      try {
        for await (const doc of cursor) {
          owners.add(doc.owner);
          if (owners.size > cap) return undefined;
        }
      } finally {
        await cursor.close();
      }
      return owners;
    },
    recall: async (bound) => {
      const doc = await sweepRecords.findOne({ _id: bound }, { maxTimeMS });
      return doc === null ? undefined : { ...doc, startedAt: doc.startedAt.getTime() };
    },
    remember: (bound, { startedAt, slotIndex, owners }) =>
      upsert(sweepRecords, bound, { startedAt: new Date(startedAt), slotIndex, owners: [...owners] }),
  };
  const index = uniqueIndexes(upkeepClient.db(options.db).collection(COLLECTION), {
    logger,
    namespace: `${options.db}.${COLLECTION}`,
    connect: connectUpkeep,
    progressMs: 10_000,
    retryMinMs: options.indexRetryMs ?? 1000,
    retryMaxMs: 60_000,
    recheckMs: options.indexRecheckMs ?? 30_000,
    writeConcern,
  });
  const outside = outsidePlants(outsideStore, {
    logger,
    viewMs: options.boundsViewMs ?? 1000,
    heartbeatMs: 10_000,
    expiryMs: options.boundsExpiryMs ?? 60_000,
    retryMs: 60_000,
    // An owner named by the sweep weighs about its name and a Set entry: at most a quarter of the budget.
    cap: Math.max(1000, Math.floor(budgetBytes / 4 / 200)),
    slotIndex: index.slotIndex,
  });
  const slots = ownerSlots(slotStore, outside, {
    budgetBytes,
    fullRecheckMs: options.fullRecheckMs ?? 1000,
  });

  let connected: Promise<unknown> | undefined;
  /**
   * Connects once (a failed attempt is forgotten so the next call tries again), then waits (within the call's deadline)
   * until the unique indexes the operation needs are in place: `id` for pages, deletes and creates without a bound,
   * `both` for creates under a bound and readiness (indexes.ts).
   * The explicit connect matters: when the driver's implicit first connect fails, its topology stays closed and
   * every later call fails with MongoTopologyClosedError even after the server is back. Once connected, the driver
   * reconnects by itself.
   */
  const ensureReady = async (need: IndexNeed, call?: { readonly signal: AbortSignal }): Promise<void> => {
    connected ??= client.connect().catch((e: unknown) => {
      connected = undefined;
      throw e;
    });
    await connected;
    await index.ready(need, call);
  };

  const repository: PlantRepository = {
    insert: (owner, p, maxPlants = NO_PLANT_LIMIT) => {
      const attempt = guarded(timeoutMs, async (call) => {
        await ensureReady(maxPlants === NO_PLANT_LIMIT ? 'id' : 'both', call);
        return slots.insert(owner, maxPlants, p, call.check, Date.now() + timeoutMs, index.slotsGeneration());
      });
      // Plain checks rather than pipe and TE.flatMap: fp-ts's data-first `dual` copies its arguments on every call
      // (about 9 µs of a create's CPU with the closures, measured beside a bare insertOne).
      return async () => {
        const outcome = await attempt();
        if (E.isLeft(outcome)) return outcome;
        // Concurrent creates of this owner kept taking the slots it chose: nothing stored, safe to retry.
        return outcome.right === undefined ? E.left(storageUnavailable) : E.right(outcome.right);
      };
    },

    page: (owner, after, limit) =>
      guarded(timeoutMs, async (call): Promise<PlantPage> => {
        await ensureReady('id', call);
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
        await ensureReady('id', call);
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
        // The room it frees, as this process knows it (and at the bound, moved to where others look: owner-slots.ts).
        // The plant is deleted whatever that move does.
        await slots.freed(owner, found.slot, call.check).catch(() => undefined);
        return true;
      }),

    // Ready: the server answers and both unique indexes are in place (a create under a bound can be served).
    ping: guarded(timeoutMs, async (call) => {
      await ensureReady('id', call);
      await db.command({ ping: 1 }, { signal: call.signal });
      await index.recheck();
      await index.ready('both', call);
    }),
  };

  // Start connecting now, without making start-up wait on it; failures show in /readyz and as 503s. An index the
  // server refuses has logged its own line.
  void ensureReady('both').catch((e: unknown) => {
    if (e instanceof IndexUnusable) return;
    logger.warn({ err: e instanceof Error ? e.message : String(e) }, 'storage not reachable yet; will retry on demand');
  });

  // Under a bound known at start, the sweep for outside plants (or its record) is under way before the first create.
  const bound = options.maxPlantsPerOwner;
  if (bound !== undefined && bound > 0) {
    void ensureReady('both')
      .then(() => outside.before(bound, index.slotsGeneration()))
      .catch(() => undefined); // the first create asks again
  }

  // A running service notices a dropped index or collection within indexRecheckMs, without a request asking.
  const recheckTimer = setInterval(
    () => void index.recheck(true).catch(() => undefined),
    options.indexRecheckMs ?? 30_000,
  );
  recheckTimer.unref();

  return {
    repository,
    client,
    slotClient: loadClient,
    // Bounded: with a server that hangs, the driver's close would wait for its own timeouts (ending sessions on the
    // server). Operations still in flight fail with the driver's closed-client errors, which are 503s.
    close: async () => {
      clearInterval(recheckTimer);
      index.stop();
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        Promise.all([client, loadClient, upkeepClient].map((c) => c.close().catch(() => undefined))),
        new Promise<void>((resolve) => {
          timer = setTimeout(resolve, Math.min(CLOSE_BOUND_MS, timeoutMs));
        }),
      ]);
      clearTimeout(timer);
    },
  };
};
