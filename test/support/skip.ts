import type { Test } from 'uvu';

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
