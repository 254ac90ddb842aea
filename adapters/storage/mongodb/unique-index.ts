import { MongoServerError, ObjectId, type Collection, type Document } from 'mongodb';
import type { Logger } from '../../../application/ports/logger.js';
import { isUnavailable } from './mongodb-errors.js';
import { createSlotIndex, SLOT_INDEX_NAME } from './owner-slots.js';

export const INDEX_NAME = 'owner_1_id_1_unique';
const INDEX_KEY = { owner: 1, id: 1 } as const;
const NAMESPACE_NOT_FOUND = 26;
const DUPLICATE_KEY = 11000;

/**
 * The sentinel: one document, kept beside the plants, whose owner no principal can have (owners have no control
 * characters). With the unique index in place, a *probe* (another document with the sentinel's owner and id) is
 * refused; without it (the collection dropped and made again by an insert, or the index dropped), the probe is stored.
 * (U+0001, not U+0000: PostgreSQL, under FerretDB, cannot store a NUL.) An insert sends its plant and a probe in one
 * ordered command, so the answer tells, in the same round trip, whether
 * the index guarded that insert.
 */
export const SENTINEL_OWNER = '\u0001plant-store:unique-index-sentinel';
export const SENTINEL_ID = 0n;
/** A fixed `_id`, so that putting the sentinel in place twice stores it once. */
const SENTINEL_DOC_ID = new ObjectId('000000000000000000000001');

/** The unique index cannot be put in place until an operator acts; the log says what to do. Answered as a 503. */
export class IndexUnusable extends Error {}

export interface UniqueIndexOptions {
  readonly logger: Logger;
  /** `<db>.<collection>`, for the log line. */
  readonly namespace: string;
  /** First wait before trying again after the server refused the index; doubles up to `retryMaxMs`. */
  readonly retryMinMs: number;
  readonly retryMaxMs: number;
  /** How often a running service checks that the index is still there (a dropped collection takes it along). */
  readonly recheckMs: number;
}

export interface UniqueIndex {
  /**
   * Resolves once the unique index on (owner, id) is known to be in place. Rejects with the driver's error when the
   * server does not answer, or with IndexUnusable while the server refuses the index (then without asking the server
   * again until the backoff has passed).
   */
  readonly ensure: () => Promise<void>;
  /** Looks again whether the index is still there, at most once per `recheckMs`, and puts it back if it is not. */
  readonly recheck: () => Promise<void>;
  /**
   * Puts the index and the sentinel in place now (after a probe was not refused). `true` means they are in place (so
   * no two plants share an owner and id, also not one written just before: the index could not have been built
   * over a duplicate); `false` means the index cannot be put in place now. Rejects with the driver's error when the
   * server does not answer.
   */
  readonly confirm: () => Promise<boolean>;
}

type State =
  | { readonly kind: 'unknown' }
  | { readonly kind: 'ok'; readonly checkedAt: number }
  | { readonly kind: 'refused'; readonly problem: string; readonly retryAt: number; readonly delayMs: number };

const sameKey = (key: unknown): boolean =>
  typeof key === 'object' &&
  key !== null &&
  JSON.stringify(Object.entries(key).map(([k, v]) => [k, Number(v)])) === JSON.stringify(Object.entries(INDEX_KEY));

const RECOVERED = 'storage: the unique index is in place; serving again';

const brief = (text: string) => (text.length > 300 ? `${text.slice(0, 300)}…` : text);

/** What is wrong and what an operator does about it, from the server's refusal. */
const diagnose = (e: MongoServerError): string => {
  const said = `${e.codeName ?? `code ${String(e.code)}`}: ${brief(e.errmsg ?? e.message)}`;
  switch (Number(e.code)) {
    case 85: // IndexOptionsConflict
      return `an index on {owner: 1, id: 1} already exists with another name or other options (${said}); drop that index and the service creates its own`;
    case 86: // IndexKeySpecsConflict
      return `an index named ${INDEX_NAME} already exists on other keys (${said}); drop it and the service creates its own`;
    case 11000: // DuplicateKey
      return `the collection holds two or more plants with the same owner and id (${said}); remove the duplicates, keeping one per owner and id`;
    default:
      // FerretDB's SQLite handler reports duplicates as an InternalError from SQLite's own unique constraint.
      return /UNIQUE constraint failed/.test(e.errmsg ?? '')
        ? `the collection holds two or more plants with the same owner and id (${said}); remove the duplicates, keeping one per owner and id`
        : `the server refused it (${said}); fix what it says`;
  }
};

/**
 * Keeps the unique index on (owner, id) in place. A server that refuses it (a conflicting index, duplicates already
 * stored) is reported with one error line that says what is wrong and what to do, and retried with backoff, never on
 * every request; the repository answers 503 meanwhile. A running service also notices the index gone (the collection
 * dropped) and puts it back.
 */
export const uniqueIndex = (collection: Collection<Document>, options: UniqueIndexOptions): UniqueIndex => {
  const { logger } = options;
  let state: State = { kind: 'unknown' };
  let building: Promise<void> | undefined;
  let rechecking: Promise<void> | undefined;

  /** What is wrong with the index as the server lists it, or undefined when it is ours and unique. */
  const inspect = async (): Promise<string | undefined> => {
    const indexes = await collection.listIndexes().toArray();
    const ours = indexes.find((i) => i['name'] === INDEX_NAME);
    if (ours === undefined) return `there is no index named ${INDEX_NAME}`;
    if (!sameKey(ours['key'])) {
      return `an index named ${INDEX_NAME} exists on other keys (${JSON.stringify(ours['key'])}); drop it and the service creates its own`;
    }
    if (ours['unique'] !== true) {
      return `an index named ${INDEX_NAME} on {owner: 1, id: 1} exists but is not unique; drop it and the service creates its own`;
    }
    return undefined;
  };

  const refuse = (problem: string): never => {
    const delayMs = state.kind === 'refused' ? Math.min(state.delayMs * 2, options.retryMaxMs) : options.retryMinMs;
    if (state.kind !== 'refused' || state.problem !== problem) {
      logger.error(
        { storage: 'mongodb', index: INDEX_NAME, namespace: options.namespace },
        `storage: the unique index ${INDEX_NAME} on ${options.namespace} cannot be put in place: ${problem}. ` +
          `Until then every storage request answers 503 and /readyz reports storage; the service tries again by ` +
          `itself (backoff up to ${Math.round(options.retryMaxMs / 1000)} s), no restart needed.`,
      );
    }
    state = { kind: 'refused', problem, retryAt: Date.now() + delayMs, delayMs };
    throw new IndexUnusable(problem);
  };

  const build = async (): Promise<void> => {
    const wasRefused = state.kind === 'refused';
    // Probes left by inserts that found the index missing would be duplicates of the sentinel's key.
    await collection.deleteMany({ owner: SENTINEL_OWNER, probe: true });
    try {
      await collection.createIndex(INDEX_KEY, { unique: true, name: INDEX_NAME });
    } catch (e) {
      if (!isUnavailable(e) && e instanceof MongoServerError) refuse(diagnose(e));
      throw e;
    }
    // Some servers answer ok for an index of that name that is not the one asked for (FerretDB ignores `unique`
    // on an existing index of the same name): read back what is there.
    const problem = await inspect();
    if (problem !== undefined) refuse(problem);
    // The quota's index (owner-slots.ts), which goes with the collection like this one.
    try {
      await createSlotIndex(collection);
    } catch (e) {
      if (!isUnavailable(e) && e instanceof MongoServerError) {
        refuse(
          `the quota's index ${SLOT_INDEX_NAME} on {owner: 1, slot: 1} cannot be built (${brief(e.errmsg ?? e.message)}); every plant needs a slot of its own per owner (plants stored before slots existed have none)`,
        );
      }
      throw e;
    }
    try {
      await collection.insertOne({ _id: SENTINEL_DOC_ID, owner: SENTINEL_OWNER, id: SENTINEL_ID });
    } catch (e) {
      if (!(e instanceof MongoServerError && Number(e.code) === DUPLICATE_KEY)) throw e;
    }
    state = { kind: 'ok', checkedAt: Date.now() };
    if (wasRefused) logger.info({ storage: 'mongodb', index: INDEX_NAME }, RECOVERED);
  };

  const ensure = (): Promise<void> => {
    if (state.kind === 'ok') return Promise.resolve();
    if (state.kind === 'refused' && Date.now() < state.retryAt) return Promise.reject(new IndexUnusable(state.problem));
    building ??= build().finally(() => {
      building = undefined;
    });
    return building;
  };

  /** The index as the server lists it now: undefined when it is ours and unique, else what is wrong. */
  const current = async (): Promise<string | undefined> => {
    try {
      return await inspect();
    } catch (e) {
      if (e instanceof MongoServerError && Number(e.code) === NAMESPACE_NOT_FOUND) return 'the collection is gone';
      throw e;
    }
  };

  /** Looks now; an index that went missing is reported once and put back. */
  const look = async (): Promise<void> => {
    const problem = await current();
    if (problem === undefined) {
      if (state.kind === 'refused') logger.info({ storage: 'mongodb', index: INDEX_NAME }, RECOVERED);
      state = { kind: 'ok', checkedAt: Date.now() };
      return;
    }
    if (state.kind === 'ok') {
      logger.warn(
        { storage: 'mongodb', index: INDEX_NAME, namespace: options.namespace },
        `storage: the unique index ${INDEX_NAME} on ${options.namespace} went missing (${problem}); putting it back`,
      );
      state = { kind: 'unknown' };
    }
    await ensure();
  };

  const recheck = (): Promise<void> => {
    if (state.kind !== 'ok' || Date.now() - state.checkedAt < options.recheckMs) return ensure();
    rechecking ??= look().finally(() => {
      rechecking = undefined;
    });
    return rechecking;
  };

  const confirm = async (): Promise<boolean> => {
    if (state.kind === 'ok') {
      logger.warn(
        { storage: 'mongodb', index: INDEX_NAME, namespace: options.namespace },
        `storage: an insert into ${options.namespace} was not guarded by the unique index ${INDEX_NAME} (the ` +
          `collection or the index went missing: dropped?); putting it back before the insert counts`,
      );
      state = { kind: 'unknown' };
    }
    try {
      await ensure();
      return true;
    } catch (e) {
      if (e instanceof IndexUnusable) return false;
      throw e;
    }
  };

  return { ensure, recheck, confirm };
};
