import { suite, type Test } from 'uvu';

/** How a suite gets its subject (a repository, a server, a service...), or why it cannot run on this machine. */
export type Setup<S> = (() => Promise<S>) | { readonly skip: string };

type Ctx<S> = { subject?: S };

/**
 * A uvu suite around one subject, made in `before` and torn down (its `teardown`, if it has one) in `after`:
 * - a subject whose server is missing here registers every test as skipped and says why, once (under CI=true the
 *   harness never gets here: a missing server is a failure there, see servers.ts);
 * - a setup that throws is printed before uvu swallows it (uvu then counts the suite's tests as run, not passed,
 *   and the summary line counts them failed).
 */
export const suiteWith = <S extends object>(name: string, setup: Setup<S>) => {
  const s = suite<Ctx<S>>(name, {});
  let test: Test<Ctx<S>> = s;
  if (typeof setup === 'function') {
    s.before(async (ctx) => {
      try {
        ctx.subject = await setup();
      } catch (e) {
        process.stdout.write(`\n  SETUP FAILED ${name}: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
        throw e;
      }
    });
    s.after(async (ctx) => {
      await (ctx.subject as { teardown?: () => Promise<void> } | undefined)?.teardown?.();
    });
  } else {
    process.stdout.write(`\n  SKIPPED ${name}: ${setup.skip}\n`);
    test = ((title: string) => s.skip(title)) as unknown as Test<Ctx<S>>;
  }
  const subject = (ctx: Ctx<S>): S => {
    if (ctx.subject === undefined) throw new Error(`${name}: setup failed`);
    return ctx.subject;
  };
  return { test, subject, run: () => s.run() };
};
