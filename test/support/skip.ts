import type { Test } from 'uvu';

/**
 * uvu swallows an error thrown by a `before` hook (the suite's tests then count as run and not passed); this
 * wrapper prints it first, so a failed server start says why.
 */
export const setup =
  <T>(suiteName: string, hook: (ctx: T) => Promise<void>) =>
  async (ctx: T): Promise<void> => {
    try {
      await hook(ctx);
    } catch (e) {
      process.stdout.write(
        `\n  SETUP FAILED ${suiteName}: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`,
      );
      throw e;
    }
  };

/**
 * A suite whose server is missing on this machine registers its tests as skipped and says why, once; under
 * CI=true the harness never gets here, because a missing server is a failure there (see servers.ts).
 */
export const skippable = <T>(s: Test<T>, name: string, setup: unknown): Test<T> => {
  if (typeof setup === 'object' && setup !== null && 'skip' in setup) {
    process.stdout.write(`\n  SKIPPED ${name}: ${String(setup.skip)}\n`);
    const skipOnly = ((title: string) => s.skip(title)) as unknown as Test<T>;
    return skipOnly;
  }
  return s;
};
