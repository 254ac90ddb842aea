/**
 * Waiting in tests: for an event or a condition, not for a length of time. Every wait has a generous deadline (a
 * loaded CI machine is slow, never wrong) and fails naming what it waited for. A fixed `sleep` is only for where time
 * itself is under test (an expiry, a timeout that must not fire early, something that must not happen) or where it
 * paces a load on purpose; each use says which, beside it.
 */

/** A fixed pause: see above for the only places it belongs. */
export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Polls `check` every `everyMs` until it returns something other than `undefined` or `false`, and resolves with that;
 * rejects after `timeoutMs` with `what` (and `detail()`, the state seen last, when given).
 */
export const eventually = async <T>(
  what: string,
  check: () => T | undefined | false | Promise<T | undefined | false>,
  {
    timeoutMs = 10_000,
    everyMs = 10,
    detail,
  }: { readonly timeoutMs?: number; readonly everyMs?: number; readonly detail?: () => string } = {},
): Promise<T> => {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined && value !== false) return value;
    if (performance.now() >= deadline) {
      throw new Error(`${what}: not within ${timeoutMs} ms${detail === undefined ? '' : ` (${detail()})`}`);
    }
    await sleep(everyMs);
  }
};

/** Resolves or rejects as `promise` does, or rejects after `ms` naming `what`; its timer never outlives the wait. */
export const within = async <T>(ms: number, what: string, promise: Promise<T>): Promise<T> => {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: not within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([promise, late]);
  } finally {
    clearTimeout(timer);
  }
};

/**
 * Waits until the service process at `base` counts at least `atLeast` requests in flight (`http_requests_in_flight` on
 * its `/metrics`, which leaves the scrape out): a request counts from its headers being read, body or no body.
 */
export const requestsInFlight = (base: string, atLeast = 1, timeoutMs = 10_000): Promise<number> =>
  eventually(
    `${atLeast} request(s) in flight at ${base}`,
    async () => {
      const text = await (await fetch(`${base}/metrics`)).text();
      const inFlight = Number(/^http_requests_in_flight (\d+)/m.exec(text)?.[1] ?? 0);
      return inFlight >= atLeast ? inFlight : undefined;
    },
    { timeoutMs },
  );
