import * as assert from 'uvu/assert';

/**
 * A strict reader of the Prometheus text exposition format 0.0.4, for the tests that scrape /metrics. (The one npm
 * parser of it, parse-prometheus-text-format, merges every labelled histogram into one unlabelled series.) Every
 * line must be a comment, blank, or a sample `name{label="value",...} number`; anything else fails the test.
 */
export interface Sample {
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly value: number;
}

export interface Exposition {
  readonly samples: readonly Sample[];
  /** `# TYPE` of each metric family. */
  readonly types: ReadonlyMap<string, string>;
  /** The samples of `name` whose labels include `labels`. */
  readonly find: (name: string, labels?: Record<string, string>) => Sample[];
  /** The one sample of `name` with exactly these labels' values (others may exist); fails when there is none. */
  readonly value: (name: string, labels?: Record<string, string>) => number;
}

const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)(?: \d+)?$/;
const LABEL = /\s*([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"\s*(?:,|$)/y;

const parseLabels = (text: string, line: string): Record<string, string> => {
  const labels: Record<string, string> = {};
  LABEL.lastIndex = 0;
  while (LABEL.lastIndex < text.length) {
    const m = LABEL.exec(text);
    assert.ok(m !== null, `labels of a sample line: ${line}`);
    labels[m[1] as string] = (m[2] as string).replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c));
  }
  return labels;
};

export const parseExposition = (text: string): Exposition => {
  const samples: Sample[] = [];
  const types = new Map<string, string>();
  for (const line of text.split('\n')) {
    if (line === '') continue;
    if (line.startsWith('#')) {
      const type = /^# TYPE (\S+) (counter|gauge|histogram|summary|untyped)$/.exec(line);
      if (type !== null) types.set(type[1] as string, type[2] as string);
      else assert.match(line, /^# HELP \S+ /, `a comment line is HELP or TYPE: ${line}`);
      continue;
    }
    const m = SAMPLE.exec(line);
    assert.ok(m !== null, `a sample line: ${line}`);
    // Values are Go ParseFloat numbers: NaN and ±Inf in any case (prom-client writes an empty mean as "Nan").
    const raw = m[3] as string;
    const special = /^([+-]?)inf$/i.exec(raw);
    const value =
      special !== null ? (special[1] === '-' ? -Infinity : Infinity) : /^nan$/i.test(raw) ? NaN : Number(raw);
    assert.ok(!Number.isNaN(value) || /^nan$/i.test(raw), `a sample value: ${line}`);
    samples.push({ name: m[1] as string, labels: parseLabels(m[2] ?? '', line), value });
  }
  const find = (name: string, labels: Record<string, string> = {}) =>
    samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
  return {
    samples,
    types,
    find,
    value: (name, labels = {}) => {
      const found = find(name, labels);
      assert.ok(found.length > 0, `a sample ${name} ${JSON.stringify(labels)}`);
      return (found[0] as Sample).value;
    },
  };
};
