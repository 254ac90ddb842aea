import { Counter, Gauge, Registry, collectDefaultMetrics } from 'prom-client';
import type { BackendMetrics, CallOutcome } from '../../application/ports/backend-metrics.js';
import { exposition, HotHistogram, type HistogramChild } from './hot-histogram.js';

/** The shapes the HTTP edge reports to and /metrics serves; bootstrap/ checks they fit where it wires them. */
export interface ServiceMetrics {
  readonly http: {
    readonly observe: (method: string, route: string, status: number, seconds: number) => void;
    /** A request answered below the app (by the parser's checks): its method when it was parsed, and the status. */
    readonly refused: (method: string | undefined, status: number) => void;
  };
  readonly backends: BackendMetrics;
  readonly exposition: { readonly contentType: string; readonly scrape: () => Promise<string> };
}

/** prom-client's default gauges with a counter's suffix; their figures remain as sums of the by-type gauges. */
const REDUNDANT_TOTALS = [
  'nodejs_active_handles_total',
  'nodejs_active_requests_total',
  'nodejs_active_resources_total',
];

/** Label values are single words, as Prometheus conventions ask: `token store` is labelled `token_store`. */
const labelOf = (backend: string) => backend.replace(/ /g, '_');

// Seconds. No edge sits on a timeout (2 s, 0.5 s, 10 s): a call cut at its timeout would land in the bucket above,
// far from the truth. 0.5 s stays, the API's p99 objective.
const HTTP_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 1.5, 2.5, 5, 15];
const BACKEND_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.4, 0.75, 1, 1.5, 2.5, 5];

/**
 * The service's Prometheus metrics on a registry of its own, with prom-client's process and Node metrics. A request
 * costs one HotHistogram observation on a child found once per (method, route, status); the request counter is read
 * from the histogram's counts at scrape time. Label values are bounded: never a raw path.
 */
export const serviceMetrics = ({
  inFlight,
  inFlightCountsScrapes = false,
  version,
  droppedSpans,
}: {
  readonly inFlight?: () => number;
  /** Whether `inFlight` counts the scrape being answered (/metrics served on the API's listener): not reported. */
  readonly inFlightCountsScrapes?: boolean;
  readonly version?: string;
  /** Spans tracing has dropped so far, by reason (when tracing is on). */
  readonly droppedSpans?: () => { readonly queueFull: number; readonly exportFailed: number };
} = {}): ServiceMetrics => {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  // `promtool check metrics` refuses a gauge named `*_total`.
  for (const name of REDUNDANT_TOTALS) registry.removeSingleMetric(name);
  if (version !== undefined) {
    new Gauge({
      name: 'plantstore_build_info',
      help: 'The running version of the service (package.json), always 1',
      labelNames: ['version'] as const,
      registers: [registry],
    }).set({ version }, 1);
  }

  const durations = new HotHistogram(
    'http_request_duration_seconds',
    'Time from the request reaching the app to its response, by method, route template and status',
    HTTP_BUCKETS,
  );
  /** One child per (route, method, status), found through nested maps of constant strings (no key built per call). */
  const httpChildren = new Map<string, Map<string, Map<number, HistogramChild>>>();
  /** The same children by label set: two route names with one template (`GET /plants`, HEAD) share a series. */
  const httpSeries = new Map<string, { readonly labels: Record<string, string>; readonly child: HistogramChild }>();
  /** Requests answered below the app (route `unrouted`): counted, without a duration (they never reached a route). */
  const refusedSeries = new Map<string, { readonly labels: Record<string, string>; count: number }>();
  // The request count is each duration series' count, read at scrape time: one observation per request, not two.
  new Counter({
    name: 'http_requests_total',
    help: 'HTTP responses sent, by method, route template and status',
    labelNames: ['method', 'route', 'status'] as const,
    registers: [registry],
    collect() {
      this.reset();
      for (const { labels, child } of httpSeries.values()) this.inc(labels, child.count());
      for (const { labels, count } of refusedSeries.values()) this.inc(labels, count);
    },
  });
  if (inFlight !== undefined) {
    new Gauge({
      name: 'http_requests_in_flight',
      help: 'Requests received and not yet answered or cut, apart from the scrape reading this',
      registers: [registry],
      collect() {
        this.set(inFlightCountsScrapes ? Math.max(0, inFlight() - 1) : inFlight());
      },
    });
  }
  if (droppedSpans !== undefined) {
    new Counter({
      name: 'plantstore_trace_spans_dropped_total',
      help: 'Trace spans never exported: queue_full (the collector slow or away), export_failed (it refused or timed out)',
      labelNames: ['reason'] as const,
      registers: [registry],
      collect() {
        const { queueFull, exportFailed } = droppedSpans();
        this.reset();
        this.inc({ reason: 'queue_full' }, queueFull);
        this.inc({ reason: 'export_failed' }, exportFailed);
      },
    });
  }
  const backendUp = new Gauge({
    name: 'plantstore_backend_up',
    help: 'Whether the last call to the backend (storage, token_store, rate_limiter) was answered: 1 yes, 0 no',
    labelNames: ['backend'] as const,
    registers: [registry],
  });
  const backendCalls = new HotHistogram(
    'plantstore_backend_call_duration_seconds',
    'Duration of calls to a backend, by backend, operation and outcome (ok, unavailable, error)',
    BACKEND_BUCKETS,
  );
  const rejections = new Counter({
    name: 'plantstore_rate_limit_rejections_total',
    help: 'Requests refused with 429 because their principal used its allowance for the window',
    registers: [registry],
  });

  const redisServers = new Gauge({
    name: 'plantstore_redis_server_info',
    help: 'The Redis server (host:port) each backend last connected to (through Sentinel: the primary then), always 1',
    labelNames: ['backend', 'address'] as const,
    registers: [registry],
  });
  const redisAddresses = new Map<string, string>();

  const callChildren = new Map<string, Map<string, Map<CallOutcome, HistogramChild>>>();

  /** `GET /plants/{id}` is labelled method GET, route /plants/{id}; `* /plants` (a 405) route /plants. */
  const templateOf = (route: string) => {
    const space = route.indexOf(' ');
    return space < 0 ? route : route.slice(space + 1);
  };

  return {
    http: {
      observe: (method, route, status, seconds) => {
        let byMethod = httpChildren.get(route);
        if (byMethod === undefined)
          httpChildren.set(route, (byMethod = new Map<string, Map<number, HistogramChild>>()));
        let byStatus = byMethod.get(method);
        if (byStatus === undefined) byMethod.set(method, (byStatus = new Map<number, HistogramChild>()));
        let child = byStatus.get(status);
        if (child === undefined) {
          const labels = { method, route: templateOf(route), status: String(status) };
          const key = `${labels.method} ${labels.route} ${labels.status}`;
          const series = httpSeries.get(key) ?? { labels, child: durations.child(labels) };
          httpSeries.set(key, series);
          child = series.child;
          byStatus.set(status, child);
        }
        child.observe(seconds);
      },
      refused: (method, status) => {
        // Node's parser accepts only the methods it knows, so the method label stays bounded.
        const labels = { method: method ?? 'unknown', route: 'unrouted', status: String(status) };
        const key = `${labels.method} ${labels.status}`;
        const series = refusedSeries.get(key);
        if (series === undefined) refusedSeries.set(key, { labels, count: 1 });
        else series.count += 1;
      },
    },
    backends: {
      observeCall: (backend, operation, outcome, seconds) => {
        let byOperation = callChildren.get(backend);
        if (byOperation === undefined)
          callChildren.set(backend, (byOperation = new Map<string, Map<CallOutcome, HistogramChild>>()));
        let byOutcome = byOperation.get(operation);
        if (byOutcome === undefined) byOperation.set(operation, (byOutcome = new Map<CallOutcome, HistogramChild>()));
        let child = byOutcome.get(outcome);
        if (child === undefined) {
          child = backendCalls.child({ backend: labelOf(backend), operation, outcome });
          byOutcome.set(outcome, child);
        }
        child.observe(seconds);
      },
      setUp: (backend, up) => backendUp.labels({ backend: labelOf(backend) }).set(up ? 1 : 0),
      rateLimited: () => rejections.inc(),
      redisServer: (backend, address) => {
        const before = redisAddresses.get(backend);
        if (before !== undefined) redisServers.remove({ backend: labelOf(backend), address: before });
        redisAddresses.delete(backend);
        if (address === undefined) return;
        redisAddresses.set(backend, address);
        redisServers.set({ backend: labelOf(backend), address }, 1);
      },
    },
    exposition: { contentType: registry.contentType, scrape: exposition(registry, [durations, backendCalls]) },
  };
};
