/** What fail fast reports of the backends: one call's duration and outcome, availability, and rate-limit refusals. */
export interface BackendMetrics {
  readonly observeCall: (backend: string, operation: string, outcome: CallOutcome, seconds: number) => void;
  readonly setUp: (backend: string, up: boolean) => void;
  readonly rateLimited: () => void;
  /** The Redis server (host:port) a backend uses now, through Sentinel the primary of the moment; undefined: none. */
  readonly redisServer?: (backend: string, address: string | undefined) => void;
}

/** `ok`: answered; `unavailable`: did not answer in time (a 503); `error`: threw (a fault). */
export type CallOutcome = 'ok' | 'unavailable' | 'error';
