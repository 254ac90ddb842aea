import type { Logger } from '../../../application/ports/logger.js';

/**
 * Which owners may hold outside plants under a bound (owner-slots.ts), known without reading any owner's plants when
 * every process creates under that one bound: then outside plants only ever leave (moved in, or deleted), and one scan
 * of the collection for plants at or above the bound (the *sweep*, in the background) names every owner that holds
 * any. The owners it names are looked at before their first create here; every other owner needs no look at all.
 *
 * Whether every process creates under one bound is what the *bounds registry* (`plants_bounds`, a document per bound,
 * `{_id: "<bound>" | "none", at}`) says: a process announces each bound it creates under before its first create under
 * it, and again every `heartbeatMs` while it still does; a bound not announced for `expiryMs` is no longer in force.
 * While another bound is in force (a rolling change of MAX_PLANTS_PER_OWNER, a process without a bound, or the storage
 * contract's instances, which switch bounds from call to call), no sweep is trusted: each owner is looked at on first
 * sight (owner-slots.ts), and plants the other bound's processes store meanwhile keep the owner within the largest bound
 * in force. Once the registry shows one bound again, the sweep runs anew, and from its end the bound is exact again.
 *
 * The registry is read at most once per `viewMs` (by the creates that need it); a view older than five times that,
 * and at least 5 s (the server did not answer), counts as another bound in force.
 *
 * A sweep's answer is also *recorded* in the store (`plants_sweeps`: the bound, when the sweep began, the slot index's
 * name then, the owners it named), so that a process starting later takes it instead of scanning the collection again:
 * a restart over a large collection is then one read, not a scan that new owners' creates wait on. The record holds
 * while no other bound has been announced since the sweep began (any other bound may have stored outside plants) and
 * the slot index is the one it was made under (a mend, which moves plants outside, comes before every build, and each
 * build names the index anew). The owners it names are a superset of those holding outside plants now: outside plants
 * only leave while one bound is in force.
 */

/** What the knowledge needs from the store. */
export interface OutsideStore {
  /** Records that this process creates under `bound` now (an upsert of `{_id: bound, at: now}`). */
  readonly announce: (bound: string) => Promise<void>;
  /** Every bound announced, with when it last was (ms since the epoch). */
  readonly announced: () => Promise<ReadonlyArray<{ readonly bound: string; readonly at: number }>>;
  /**
   * The owners holding a plant in a slot at or above `max`, or undefined when more than `cap` do. A scan of the
   * collection (its cost grows with it), on a connection of its own with its own bound.
   */
  readonly outsideOwners: (max: number, cap: number) => Promise<ReadonlySet<string> | undefined>;
  /** The last sweep's record under `bound`, if any. */
  readonly recall: (bound: string) => Promise<SweepRecord | undefined>;
  /** Keeps a sweep's record under `bound`, in place of the one before. */
  readonly remember: (bound: string, record: SweepRecord) => Promise<void>;
}

/** What a sweep found, and under what (see above). */
export interface SweepRecord {
  /** When the sweep began (ms since the epoch, the sweeping process's clock). */
  readonly startedAt: number;
  /** The slot index's name(s) when it began (indexes.ts `slotIndex`). */
  readonly slotIndex: string;
  readonly owners: readonly string[];
}

/** Owners a record may name at most (a document, under MongoDB's 16 MB); a sweep that named more is not recorded. */
const RECORDED_OWNERS = 10_000;

export interface OutsideOptions {
  readonly logger: Logger;
  /** Least time between two reads of the registry. */
  readonly viewMs: number;
  /** How often a bound in use is announced again. */
  readonly heartbeatMs: number;
  /** A bound not announced for this long is no longer in force. */
  readonly expiryMs: number;
  /** Wait before a sweep that failed (or found too many owners) is tried again. */
  readonly retryMs: number;
  /** Owners the sweep may name at most (each is remembered until its plants are moved in). */
  readonly cap: number;
  /** The slot index's name(s) now (indexes.ts); without it, or while it is '', no sweep is recorded or taken up. */
  readonly slotIndex?: () => string;
}

const keyOf = (max: number): string => (Number.isFinite(max) ? String(max) : 'none');

interface Sweep {
  readonly startedAt: number;
  /** The slot index it runs under. */
  readonly slotIndex: string;
  /** Settles when the sweep ends, whichever way. */
  readonly ended: Promise<void>;
  risky?: Set<string>;
  failedAt?: number;
}

export const outsidePlants = (store: OutsideStore, options: OutsideOptions) => {
  let view: { readonly at: number; readonly bounds: ReadonlyMap<string, number> } | undefined;
  let refreshing: Promise<void> | undefined;
  /** Bounds this process created under, and when it last announced each. */
  const announcedAt = new Map<string, number>();
  const sweeps = new Map<number, Sweep>();
  /**
   * Moves whenever a sweep's answer is withdrawn (another bound came into force, or the slots were mended): owners
   * admitted on that answer alone, without a look, must be looked at again (owner-slots.ts drops what it knows).
   */
  let epoch = 0;
  let slotsGeneration = 0;

  /** The first announcement of each bound, shared by the creates waiting for it. */
  const announcing = new Map<string, Promise<void>>();
  const announce = async (key: string): Promise<void> => {
    const last = announcedAt.get(key);
    const now = Date.now();
    if (last === undefined) {
      // Before the first create under it: other processes see it within their viewMs.
      let first = announcing.get(key);
      if (first === undefined) {
        first = store.announce(key).finally(() => announcing.delete(key));
        announcing.set(key, first);
      }
      await first;
      announcedAt.set(key, now);
    } else if (now - last >= options.heartbeatMs) {
      announcedAt.set(key, now);
      void store.announce(key).catch(() => announcedAt.set(key, last));
    }
  };

  const refresh = async (): Promise<void> => {
    if (view !== undefined && Date.now() - view.at < options.viewMs) return;
    refreshing ??= store
      .announced()
      .then((list) => {
        view = { at: Date.now(), bounds: new Map(list.map((e) => [e.bound, e.at])) };
      })
      .catch(() => undefined) // an old view counts as another bound in force (see `mixed`)
      .finally(() => {
        refreshing = undefined;
      });
    await refreshing;
  };

  /** Whether a bound other than `max` is in force, as far as the registry says (or cannot say). */
  const mixed = (max: number): boolean => {
    if (view === undefined || Date.now() - view.at > Math.max(5 * options.viewMs, 5000)) return true;
    const key = keyOf(max);
    for (const [bound, at] of view.bounds) if (bound !== key && view.at - at < options.expiryMs) return true;
    return false;
  };

  const drop = (max: number): void => {
    if (sweeps.get(max)?.risky !== undefined) epoch++;
    sweeps.delete(max);
  };

  /**
   * The owners the last sweep recorded under `max`, when that record holds: made under the slot index in place now,
   * and no other bound announced since it began. Clocks of processes differ by seconds, not by half the expiry: a
   * bound announced up to that long before the sweep began counts as announced after it.
   */
  const recalled = async (max: number, slotIndex: string): Promise<ReadonlySet<string> | undefined> => {
    if (slotIndex === '' || view === undefined) return undefined;
    const key = keyOf(max);
    const record = await store.recall(key);
    if (record === undefined || record.slotIndex !== slotIndex) return undefined;
    for (const [bound, at] of view.bounds)
      if (bound !== key && at >= record.startedAt - options.expiryMs / 2) return undefined;
    return new Set(record.owners);
  };

  const sweep = (max: number): void => {
    let ended: () => void = () => undefined;
    const entry: Sweep = {
      startedAt: Date.now(),
      slotIndex: options.slotIndex?.() ?? '',
      ended: new Promise((resolve) => (ended = resolve)),
    };
    sweeps.set(max, entry);
    const run = async (): Promise<{ owners: ReadonlySet<string> | undefined; recalled: boolean }> => {
      const known = await recalled(max, entry.slotIndex).catch(() => undefined);
      if (known !== undefined) return { owners: known, recalled: true };
      options.logger.debug(
        { bound: max },
        'storage: looking for plants outside the quota in the background (a scan of the collection); until it ends, each owner is looked at once before its first create here',
      );
      return { owners: await store.outsideOwners(max, options.cap), recalled: false };
    };
    void run()
      .then(
        ({ owners, recalled }) => {
          if (sweeps.get(max) !== entry) return; // dropped meanwhile
          if (owners === undefined) {
            entry.failedAt = Date.now();
            options.logger.warn(
              { bound: max, cap: options.cap },
              'storage: more owners than the cap hold plants outside the quota; each owner is looked at once before its first create here',
            );
            return;
          }
          const named = [...owners];
          entry.risky = new Set(named);
          // Worth an operator's attention when it found outside plants or took long; otherwise a debug line.
          const ms = Date.now() - entry.startedAt;
          const log = owners.size > 0 || ms >= 1000 ? options.logger.info : options.logger.debug;
          log.call(
            options.logger,
            { bound: max, owners: owners.size, ms },
            recalled
              ? 'storage: plants outside the quota are as the last sweep recorded them (no scan); owners without any need no look before a create'
              : 'storage: the scan for plants outside the quota is done; owners without any need no look before a create',
          );
          if (recalled || entry.slotIndex === '' || named.length > RECORDED_OWNERS) return;
          store
            .remember(keyOf(max), { startedAt: entry.startedAt, slotIndex: entry.slotIndex, owners: named })
            .catch((e: unknown) =>
              options.logger.debug(
                { bound: max, err: e instanceof Error ? e.message : String(e) },
                'storage: the sweep was not recorded; a process starting later scans again',
              ),
            );
        },
        (e: unknown) => {
          if (sweeps.get(max) !== entry) return;
          entry.failedAt = Date.now();
          options.logger.warn(
            { bound: max, err: e instanceof Error ? e.message : String(e) },
            'storage: the scan for plants outside the quota failed; it is tried again later',
          );
        },
      )
      .finally(ended);
  };

  /**
   * Before a create under `max` (Infinity: none): announces the bound, reads the registry when due. Answers the owners
   * that may hold outside plants under `max` when that is known without looking at each (one bound in force, and a
   * sweep done since), otherwise undefined (look at each owner on first sight); and the epoch of that answer.
   */
  const before = async (
    max: number,
    generation: number,
  ): Promise<{
    readonly risky: Set<string> | undefined;
    readonly epoch: number;
    /** While a sweep under `max` runs: when it ends. */
    readonly sweeping?: Promise<void>;
  }> => {
    if (generation !== slotsGeneration) {
      // The slot index was rebuilt or mended: outside plants may have come into being. Sweep again.
      slotsGeneration = generation;
      for (const max of [...sweeps.keys()]) drop(max);
    }
    await announce(keyOf(max));
    await refresh();
    if (!Number.isFinite(max)) return { risky: undefined, epoch };
    if (mixed(max)) {
      drop(max);
      return { risky: undefined, epoch };
    }
    const current = sweeps.get(max);
    if (current === undefined || (current.failedAt !== undefined && Date.now() - current.failedAt >= options.retryMs)) {
      sweep(max);
    }
    const now = sweeps.get(max);
    if (now?.risky !== undefined) return { risky: now.risky, epoch };
    return now !== undefined && now.failedAt === undefined
      ? { risky: undefined, epoch, sweeping: now.ended }
      : { risky: undefined, epoch };
  };

  return { before };
};
