import { processesInGroup, runNode } from './process.js';
import { eventually, within } from './wait.js';

/**
 * Runs `dist/<script>` in a process group of its own until it exits (within `timeoutMs`), then waits until nothing it
 * started is left in that group (a process it only signalled at its own exit may take a moment to go) and its output
 * is read to the end. Whatever fails on the way, the whole group is killed first: nothing of the bench outlives the
 * test. Answers its exit code and output.
 */
export const runToEnd = async (
  script: string,
  env: Record<string, string>,
  args: readonly string[],
  timeoutMs = 120_000,
): Promise<{ readonly code: number | null; readonly out: string; readonly err: string }> => {
  const bench = runNode(script, env, [...args], { group: true });
  const pgid = bench.child.pid as number;
  const killGroup = () => {
    try {
      process.kill(-pgid, 'SIGKILL');
    } catch {
      // nothing left in it
    }
  };
  // 'exit', not 'close': a process left behind may hold the bench's stderr open.
  const exit = new Promise<number | null>((resolve) => bench.child.once('exit', resolve));
  try {
    const code = await within(timeoutMs, `${script} to exit`, exit);
    await eventually('every process the bench started has exited', () => processesInGroup(pgid).length === 0, {
      timeoutMs: 5000,
      detail: () => processesInGroup(pgid).join('; '),
    });
    await within(10_000, "the bench's output read to its end", bench.exited);
    return { code, out: bench.stdout(), err: bench.stderr() };
  } catch (e) {
    killGroup();
    throw e;
  }
};
