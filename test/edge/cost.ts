import * as assert from 'uvu/assert';

/**
 * Growth classes, never times: how much more one call costs when its input is `ratio` times larger. The figure is
 * the best of several batches at each size (the batch least disturbed by whatever else the shared machine runs).
 * A linear cost grows about `ratio` times (16 from 1 KiB to 16 KiB), a quadratic one about ratio² (256); the bound
 * asserted sits between the two.
 */

const TRIALS = 5;
/** Calibration stops doubling the batch here, so a slow call is timed once per trial, not thousands of times. */
const BATCH_MS = 8;
const MAX_REPS = 1 << 16;

/** CPU milliseconds this process used since `from` (a `process.cpuUsage()`), all threads, user and system. */
const cpuMsSince = (from: NodeJS.CpuUsage): number => {
  const used = process.cpuUsage(from);
  return (used.user + used.system) / 1000;
};

/**
 * Best CPU milliseconds per call of `fn`, over TRIALS batches each long enough for the clock. CPU time, not wall time:
 * on a loaded machine a batch is preempted (the isJsonContentType case measured 105x for 16x the input at a load
 * average of 15, wall time, against 16x to 20x quiet), and time spent waiting for a core is no cost of `fn`.
 */
export const perCallMs = (fn: () => unknown): number => {
  let reps = 1;
  for (;;) {
    const start = process.cpuUsage();
    for (let i = 0; i < reps; i++) fn();
    if (cpuMsSince(start) >= BATCH_MS || reps >= MAX_REPS) break;
    reps *= 2;
  }
  let best = Infinity;
  for (let trial = 0; trial < TRIALS; trial++) {
    const start = process.cpuUsage();
    for (let i = 0; i < reps; i++) fn();
    best = Math.min(best, cpuMsSince(start) / reps);
  }
  return best;
};

/** The same for an asynchronous call (an HTTP request): the best of `tries` sequential calls. */
export const perCallMsAsync = async (fn: () => Promise<unknown>, tries = 9): Promise<number> => {
  await fn(); // warm: connections, JIT
  let best = Infinity;
  for (let i = 0; i < tries; i++) {
    const start = performance.now();
    await fn();
    best = Math.min(best, performance.now() - start);
  }
  return best;
};

/**
 * Asserts that the cost grew no faster than linearly from `small` to `large` (inputs `ratio` times apart): less than
 * `slack` x ratio. A whole HTTP request carries a fixed cost (connection, headers, routing) that dilutes the growth
 * of what the body costs, so requests are held to slack 2 (a quadratic parse of a 16 KiB body still shows 65x to
 * 110x there); a bare function to the default 4.
 */
export const assertLinear = (label: string, small: number, large: number, ratio: number, slack = 4): void => {
  const growth = large / Math.max(small, 1e-6);
  assert.ok(
    growth < slack * ratio,
    `${label}: ${ratio}x the input cost ${growth.toFixed(1)}x the time (${small.toFixed(4)} ms -> ${large.toFixed(4)} ms); linear is about ${ratio}x, quadratic ${ratio * ratio}x`,
  );
};

/** Pads `make(n)` until it is exactly `bytes` long (UTF-8), for inputs built from a repeated unit. */
export const sized = (bytes: number, make: (n: number) => string): string => {
  let lo = 0;
  let hi = bytes;
  while (lo < hi) {
    const mid = Math.ceil((lo + hi) / 2);
    if (Buffer.byteLength(make(mid)) <= bytes) lo = mid;
    else hi = mid - 1;
  }
  return make(lo);
};
