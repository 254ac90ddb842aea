import { AggregatorRegistry, Registry } from 'prom-client';

/** One label set's series: observations by bucket (not yet cumulative), their sum and count. */
export interface HistogramChild {
  readonly observe: (value: number) => void;
  /** Observations so far. */
  readonly count: () => number;
}

interface Series {
  readonly labels: Readonly<Record<string, string>>;
  /** counts[i]: observations in (bucket i-1, bucket i]; the last slot, above the largest bucket (+Inf). */
  readonly counts: Float64Array;
  sum: number;
  count: number;
}

/** A histogram's values as prom-client's `registry.getMetricsAsJSON()` gives them, which its aggregator reads. */
interface HistogramJson {
  readonly name: string;
  readonly help: string;
  readonly type: 'histogram';
  readonly aggregator: 'sum';
  readonly values: { labels: Record<string, string | number>; value: number; metricName: string }[];
}

/**
 * A Prometheus histogram for per-request observations: prom-client's validates and hashes the labels on every one
 * (about 1 µs, a tenth of a request's CPU: docs/performance.md); here a label set resolves to its series once, and an
 * observation is a bucket search and three additions. prom-client formats it through its public API (`exposition`).
 */
export class HotHistogram {
  private readonly series: Series[] = [];

  constructor(
    readonly name: string,
    readonly help: string,
    private readonly buckets: readonly number[],
  ) {}

  /** The series of one label set (a new one each call: resolve it once and keep it). */
  child(labels: Readonly<Record<string, string>>): HistogramChild {
    const series: Series = { labels, counts: new Float64Array(this.buckets.length + 1), sum: 0, count: 0 };
    this.series.push(series);
    const buckets = this.buckets;
    return {
      observe: (value) => {
        let i = 0;
        while (i < buckets.length && value > (buckets[i] as number)) i++;
        series.counts[i] = (series.counts[i] as number) + 1;
        series.sum += value;
        series.count += 1;
      },
      count: () => series.count,
    };
  }

  /** Every series' cumulative buckets, sum and count, as prom-client's JSON form of a histogram. */
  toJson(): HistogramJson {
    const values: HistogramJson['values'] = [];
    for (const s of this.series) {
      let cumulative = 0;
      this.buckets.forEach((le, i) => {
        cumulative += s.counts[i] as number;
        values.push({ labels: { le, ...s.labels }, value: cumulative, metricName: `${this.name}_bucket` });
      });
      values.push({ labels: { le: '+Inf', ...s.labels }, value: s.count, metricName: `${this.name}_bucket` });
      values.push({ labels: { ...s.labels }, value: s.sum, metricName: `${this.name}_sum` });
      values.push({ labels: { ...s.labels }, value: s.count, metricName: `${this.name}_count` });
    }
    return { name: this.name, help: this.help, type: 'histogram', aggregator: 'sum', values };
  }
}

/** The text exposition of a registry and these histograms, formatted by prom-client (see HotHistogram). */
export const exposition = (registry: Registry, histograms: readonly HotHistogram[]) => (): Promise<string> =>
  Registry.merge([registry, AggregatorRegistry.aggregate([histograms.map((h) => h.toJson())])]).metrics();
