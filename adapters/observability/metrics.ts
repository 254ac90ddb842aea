import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/** What the backend decorators report: one call's duration and outcome, availability, and rate-limit refusals. */
export interface BackendMetrics {
  readonly observeCall: (backend: string, operation: string, outcome: CallOutcome, seconds: number) => void;
  readonly setUp: (backend: string, up: boolean) => void;
  readonly rateLimited: () => void;
}

/** `ok`: answered; `unavailable`: did not answer in time (a 503); `error`: threw (a fault). */
export type CallOutcome = 'ok' | 'unavailable' | 'error';

/**
 * The service's metrics, in the shapes their users ask for: `http` is what the HTTP edge reports (its HttpMetrics),
 * `exposition` what the /metrics endpoints serve (its MetricsExposition). This adapter imports no other adapter;
 * bootstrap/ checks that the shapes fit where it wires them.
 */
export interface ServiceMetrics {
  readonly http: {
    readonly observe: (method: string, route: string, status: number, seconds: number) => void;
  };
  readonly backends: BackendMetrics;
  readonly exposition: { readonly contentType: string; readonly scrape: () => Promise<string> };
}

// Seconds. The API answers in about a millisecond on memory storage; backends are bounded at 2 s by default.
const HTTP_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
const BACKEND_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 5];

/**
 * The service's Prometheus metrics, on a registry of its own (prom-client): requests by route, method and status,
 * their durations and the requests in flight (counted by the server, read at scrape time); each backend's availability and call durations; rate-limit refusals;
 * and prom-client's default process and Node metrics (CPU, memory, heap, GC, event-loop lag).
 *
 * Per request the edge costs one counter increment and one histogram observation on a label child that is looked
 * up once per (method, route, status) and reused: the label values are bounded (methods Node's parser accepts, the
 * app's route templates, status codes), never a raw path.
 */
export const serviceMetrics = ({ inFlight }: { readonly inFlight?: () => number } = {}): ServiceMetrics => {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });

  const requests = new Counter({
    name: 'http_requests_total',
    help: 'HTTP responses sent, by method, route template and status',
    labelNames: ['method', 'route', 'status'] as const,
    registers: [registry],
  });
  const durations = new Histogram({
    name: 'http_request_duration_seconds',
    help: 'Time from the request reaching the app to its response, by method, route template and status',
    labelNames: ['method', 'route', 'status'] as const,
    buckets: HTTP_BUCKETS,
    registers: [registry],
  });
  if (inFlight !== undefined) {
    new Gauge({
      name: 'http_requests_in_flight',
      help: 'Requests received and not yet answered or cut',
      registers: [registry],
      collect() {
        this.set(inFlight());
      },
    });
  }
  const backendUp = new Gauge({
    name: 'plantstore_backend_up',
    help: 'Whether the last call to the backend (storage, token store, rate limiter) was answered: 1 yes, 0 no',
    labelNames: ['backend'] as const,
    registers: [registry],
  });
  const backendCalls = new Histogram({
    name: 'plantstore_backend_call_duration_seconds',
    help: 'Duration of calls to a backend, by backend, operation and outcome (ok, unavailable, error)',
    labelNames: ['backend', 'operation', 'outcome'] as const,
    buckets: BACKEND_BUCKETS,
    registers: [registry],
  });
  const rejections = new Counter({
    name: 'plantstore_rate_limit_rejections_total',
    help: 'Requests refused with 429 because their principal used its allowance for the window',
    registers: [registry],
  });

  type HttpChildren = { readonly count: Counter.Internal; readonly duration: Histogram.Internal<string> };
  const httpChildren = new Map<string, HttpChildren>();
  const callChildren = new Map<string, Histogram.Internal<string>>();

  /** `GET /plants/{id}` is labelled method GET, route /plants/{id}; `* /plants` (a 405) route /plants. */
  const templateOf = (route: string) => {
    const space = route.indexOf(' ');
    return space < 0 ? route : route.slice(space + 1);
  };

  return {
    http: {
      observe: (method, route, status, seconds) => {
        const key = `${method} ${route} ${status}`;
        let children = httpChildren.get(key);
        if (children === undefined) {
          const labels = { method, route: templateOf(route), status: String(status) };
          children = { count: requests.labels(labels), duration: durations.labels(labels) };
          httpChildren.set(key, children);
        }
        children.count.inc();
        children.duration.observe(seconds);
      },
    },
    backends: {
      observeCall: (backend, operation, outcome, seconds) => {
        const key = `${backend}\u0000${operation}\u0000${outcome}`;
        let child = callChildren.get(key);
        if (child === undefined) {
          child = backendCalls.labels({ backend, operation, outcome });
          callChildren.set(key, child);
        }
        child.observe(seconds);
      },
      setUp: (backend, up) => backendUp.labels({ backend }).set(up ? 1 : 0),
      rateLimited: () => rejections.inc(),
    },
    exposition: { contentType: registry.contentType, scrape: () => registry.metrics() },
  };
};
