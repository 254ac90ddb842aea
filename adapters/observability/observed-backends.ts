import { left } from 'fp-ts/lib/Either.js';
import type { TaskEither } from 'fp-ts/lib/TaskEither.js';
import { authUnavailable, rateLimiterUnavailable, storageUnavailable } from '../../application/errors.js';
import type { Logger } from '../../application/ports/logger.js';
import type { PlantRepository } from '../../application/ports/plant-repository.js';
import type { RateLimiter } from '../../application/ports/rate-limiter.js';
import type { TokenVerifier } from '../../application/ports/token-verifier.js';
import type { BackendMetrics, CallOutcome } from './metrics.js';

/**
 * Decorators around the ports that reach a backend, built once in bootstrap so that no adapter has to: each call is
 * timed into the metrics, and the backend's availability is tracked from the outcomes. An outage is logged once when
 * it starts (warn, with the driver's reason) and once when it ends (info, with its length), at most one outage line
 * per backend every `throttleMs`; flapping beyond that is counted into the next line instead of flooding the log.
 * A backend is known down when a call failed and no call has been answered since that call began: one slow call among
 * answered ones (an owner's large load past its deadline) is that call's failure, not an outage. While a backend is
 * known down, calls to it fail at once without reaching it, except one probe at a time, at most one every
 * `probeEveryMs`: the probe finds the backend's return, and its success lets every call through again.
 */

export type BackendName = 'storage' | 'token store' | 'rate limiter';

export interface BackendObserver {
  /** A driver's own report of trouble (a failed heartbeat, a connection error): the reason of the next outage line. */
  readonly driverError: (backend: BackendName, reason: string) => void;
  readonly answered: (backend: BackendName) => void;
  /** How many calls the backend has answered so far: given back to `failed` by a call that began then. */
  readonly answers: (backend: BackendName) => number;
  /** A call failed; with `answersBefore`, not an outage if the backend answered another call since that one began. */
  readonly failed: (backend: BackendName, reason: string, answersBefore?: number) => void;
  /** Whether a call may reach the backend now: 'refuse' while it is known down and another call probes it. */
  readonly admit: (backend: BackendName) => 'call' | 'probe' | 'refuse';
  /** The probe `admit` let through has ended: the next may come `probeEveryMs` later. */
  readonly probed: (backend: BackendName) => void;
}

/** How long a driver's report stays the likely reason of a failure. */
const REASON_FRESH_MS = 30_000;

/** Never a credential in a log line: a URL's user information is masked, and a reason is kept short. */
export const redact = (reason: string): string =>
  reason
    .replace(/\/\/[^/@\s]*@/g, '//***@')
    .replace(/\s+/g, ' ')
    .slice(0, 300);

interface State {
  up: boolean | undefined;
  answers: number;
  /** While down, when the next probe may start (Infinity: one is under way). */
  nextProbeAt: number;
  downSince: number;
  lastLineAt: number;
  /** Whether this outage's first line was held back by the throttle (then its recovery is too). */
  quiet: boolean;
  notLogged: number;
  driverReason: { readonly text: string; readonly at: number } | undefined;
  /** The outage line waiting for the driver's reason (see `reasonWaitMs`): write it now. */
  flush: (() => void) | undefined;
}

export const backendObserver = ({
  logger,
  metrics,
  throttleMs = 10_000,
  reasonWaitMs = 0,
  probeEveryMs = 1000,
  now = Date.now,
}: {
  readonly logger: Logger;
  readonly metrics?: BackendMetrics;
  readonly throttleMs?: number;
  /**
   * How long an outage line may wait for the driver's own reason when none has come yet: a call can fail (no
   * connection to write to) before the driver's event saying why (the connection's close) has been read.
   */
  readonly reasonWaitMs?: number;
  /** While a backend is down, the least time from one probe's end to the next probe (Retry-After says 1 s too). */
  readonly probeEveryMs?: number;
  readonly now?: () => number;
}): BackendObserver => {
  const states = new Map<BackendName, State>();
  const stateOf = (backend: BackendName): State => {
    let s = states.get(backend);
    if (s === undefined) {
      s = {
        up: undefined,
        answers: 0,
        nextProbeAt: 0,
        downSince: 0,
        lastLineAt: -Infinity,
        quiet: false,
        notLogged: 0,
        driverReason: undefined,
        flush: undefined,
      };
      states.set(backend, s);
    }
    return s;
  };
  const freshReason = (s: State, at: number) =>
    s.driverReason !== undefined && at - s.driverReason.at <= REASON_FRESH_MS ? s.driverReason.text : undefined;
  return {
    driverError: (backend, reason) => {
      stateOf(backend).driverReason = { text: redact(reason), at: now() };
    },
    answered: (backend) => {
      const s = stateOf(backend);
      s.answers += 1;
      if (s.up === true) return;
      s.flush?.();
      const wasDown = s.up === false;
      s.up = true;
      metrics?.setUp(backend, true);
      if (wasDown && !s.quiet) logger.info({ backend, downForMs: now() - s.downSince }, `${backend} recovered`);
    },
    answers: (backend) => stateOf(backend).answers,
    failed: (backend, reason, answersBefore) => {
      const s = stateOf(backend);
      if (s.up === false || (answersBefore !== undefined && s.answers > answersBefore)) return;
      const at = now();
      s.up = false;
      s.downSince = at;
      metrics?.setUp(backend, false);
      if (at - s.lastLineAt < throttleMs) {
        s.quiet = true;
        s.notLogged += 1;
        return;
      }
      const notLogged = s.notLogged;
      const line = (driver: string | undefined) =>
        logger.warn(
          { backend, reason: driver ?? redact(reason), ...(notLogged > 0 ? { outagesNotLogged: notLogged } : {}) },
          `${backend} unavailable`,
        );
      const driver = freshReason(s, at);
      if (driver !== undefined || reasonWaitMs <= 0) line(driver);
      else {
        const timer = setTimeout(() => s.flush?.(), reasonWaitMs);
        timer.unref();
        s.flush = () => {
          clearTimeout(timer);
          s.flush = undefined;
          line(freshReason(s, now()));
        };
      }
      s.lastLineAt = at;
      s.quiet = false;
      s.notLogged = 0;
    },
    admit: (backend) => {
      const s = stateOf(backend);
      if (s.up !== false) return 'call';
      if (now() < s.nextProbeAt) return 'refuse';
      s.nextProbeAt = Infinity;
      return 'probe';
    },
    probed: (backend) => {
      stateOf(backend).nextProbeAt = now() + probeEveryMs;
    },
  };
};

interface Probe {
  readonly observer: BackendObserver;
  readonly metrics: BackendMetrics | undefined;
}

const describe = (e: unknown) => (e instanceof Error ? e.message : String(e));

/**
 * Times one call of a TaskEither port and reports its outcome: a Left tagged as `unavailable` is the backend's
 * failure, any other Left (a full store) is its answer. A thrown error is reported, then thrown again. While the
 * backend is known down, a call the observer does not admit is `unavailable` at once.
 */
const timed =
  <E, A>(
    probe: Probe,
    backend: BackendName,
    operation: string,
    unavailable: E & { readonly _tag: string },
    task: TaskEither<E, A>,
  ): TaskEither<E, A> =>
  async () => {
    const admitted = probe.observer.admit(backend);
    if (admitted === 'refuse') {
      probe.metrics?.observeCall(backend, operation, 'unavailable', 0);
      return left(unavailable);
    }
    const started = performance.now();
    const answersBefore = probe.observer.answers(backend);
    const report = (outcome: CallOutcome) => {
      const ms = performance.now() - started;
      probe.metrics?.observeCall(backend, operation, outcome, ms / 1000);
      if (admitted === 'probe') probe.observer.probed(backend);
      return ms;
    };
    let result;
    try {
      result = await task();
    } catch (e) {
      report('error');
      probe.observer.failed(backend, describe(e), answersBefore);
      throw e;
    }
    if (result._tag === 'Right') {
      report('ok');
      probe.observer.answered(backend);
    } else {
      const ms = report('unavailable');
      if ((result.left as { _tag?: unknown })._tag !== unavailable._tag) probe.observer.answered(backend);
      else probe.observer.failed(backend, `no answer (gave up after ${Math.round(ms)} ms)`, answersBefore);
    }
    return result;
  };

export const observedPlants = (plants: PlantRepository, probe: Probe): PlantRepository => ({
  insert: (owner, plant, maxPlants) =>
    timed(probe, 'storage', 'insert', storageUnavailable, plants.insert(owner, plant, maxPlants)),
  page: (owner, after, limit) => timed(probe, 'storage', 'page', storageUnavailable, plants.page(owner, after, limit)),
  remove: (owner, id) => timed(probe, 'storage', 'remove', storageUnavailable, plants.remove(owner, id)),
  ping: timed(probe, 'storage', 'ping', storageUnavailable, plants.ping),
});

export const observedTokens = (tokens: TokenVerifier, probe: Probe): TokenVerifier => ({
  verify: (token, rejected) => timed(probe, 'token store', 'verify', authUnavailable, tokens.verify(token, rejected)),
  ping: timed(probe, 'token store', 'ping', authUnavailable, tokens.ping),
});

/** The limiter, timed and reported like the other backends; every refusal it decides is counted too. */
export const observedLimiter = (limiter: RateLimiter, probe: Probe): RateLimiter => ({
  consume: (key) => async () => {
    const decision = await timed(probe, 'rate limiter', 'consume', rateLimiterUnavailable, limiter.consume(key))();
    if (decision._tag === 'Right' && !decision.right.allowed) probe.metrics?.rateLimited();
    return decision;
  },
});
