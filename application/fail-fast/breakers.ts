import type { BackendMetrics } from '../ports/backend-metrics.js';
import type { Logger } from '../ports/logger.js';

/**
 * Fail fast (contract §11, §12): one breaker per backend decides whether a call may reach it now. A backend is down
 * when a call to it failed (no answer, or not in time) and none has been answered since that call began (one slow call
 * among answered ones is not an outage). While down, calls are refused at once (a 503 with Retry-After), but for one
 * probe at a time, at most one every PROBE_EVERY_MS, whose answer lets every call through again. Only the backend's
 * own failures count: what it answered, a refusal or a fault included, is an answer, so no caller opens a breaker by
 * what it asks (guards.ts). An outage is logged when it starts and when it ends, at most one line per backend every
 * `throttleMs` (flapping beyond that is counted into the next line), and availability goes to the metrics.
 */

export type BackendName = 'storage' | 'token store' | 'rate limiter';

export interface Breakers {
  /** A driver's own report of trouble (a failed heartbeat, a connection error): the reason of the next outage line. */
  readonly driverError: (backend: BackendName, reason: string) => void;
  readonly answered: (backend: BackendName) => void;
  /** How many calls the backend has answered so far: given back to `failed` by a call that began then. */
  readonly answers: (backend: BackendName) => number;
  /** A call failed; with `answersBefore`, not an outage if the backend answered another call since that one began. */
  readonly failed: (backend: BackendName, reason: string, answersBefore?: number) => void;
  /** Whether a call may reach the backend now: 'refuse' while it is known down and another call probes it. */
  readonly admit: (backend: BackendName) => 'call' | 'probe' | 'refuse';
  /** The probe `admit` let through has ended: the next may come PROBE_EVERY_MS later. */
  readonly probed: (backend: BackendName) => void;
}

/** While a backend is down, the least time from one probe's end to the next (Retry-After says 1 s too). */
const PROBE_EVERY_MS = 1000;
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

export const backendBreakers = ({
  logger,
  metrics,
  throttleMs = 10_000,
  reasonWaitMs = 0,
  now = Date.now,
}: {
  readonly logger: Logger;
  readonly metrics?: BackendMetrics;
  readonly throttleMs?: number;
  /** How long an outage line may wait for the driver's reason, which can come after the failed call. */
  readonly reasonWaitMs?: number;
  readonly now?: () => number;
}): Breakers => {
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
      stateOf(backend).nextProbeAt = now() + PROBE_EVERY_MS;
    },
  };
};
