/**
 * `npm test`: runs every uvu suite under dist/test (compiled by the pretest type-check), then prints one line
 * `N passed, N failed, N skipped`. Failures are counted as tests run minus tests passed: uvu counts a suite whose
 * `before` hook threw as run and not passed, without failing the run, so its own exit code is not enough.
 *
 * The run always ends. uvu runs every file in one process, which exits only once nothing holds it: a process a test
 * started and never stopped (its assertion failed first) would hold it, and the run, forever. So uvu runs in a process
 * group of its own with `process.js` loaded first (it kills the processes its helpers started when uvu exits, and makes
 * SIGTERM an exit). When uvu has not exited `TEST_EXIT_GRACE_MS` (5 s) after printing its totals, or has exited while
 * something it started still holds its output, this runner names what still runs, sends uvu SIGTERM, then SIGKILLs
 * every process of uvu's tree and of its process groups that is left, and prints the line: what a test left running
 * counts as one failure when no test failed (the run would otherwise have hung). A stop signal to the runner ends the
 * tree the same way.
 */
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const testDir = join(here, '..');
// uvu's main module is dist/index.js; its CLI sits beside dist/.
const uvuBin = join(dirname(createRequire(import.meta.url).resolve('uvu')), '..', 'bin.js');
const pattern = process.argv[2] ?? '\\.test\\.js$';
const graceMs = Number(process.env['TEST_EXIT_GRACE_MS'] ?? '') || 5000;
/** How long uvu gets to act on SIGTERM (its exit hooks stop the harness's servers) before everything is SIGKILLed. */
const TERM_MS = 2000;

const child = spawn(
  process.execPath,
  ['--import', pathToFileURL(join(here, 'process.js')).href, uvuBin, testDir, pattern, '--no-color'],
  { stdio: ['ignore', 'pipe', 'inherit'], detached: true },
);
const uvuPid = child.pid;
let output = '';
let graceTimer: NodeJS.Timeout | undefined;
child.stdout.on('data', (chunk: Buffer) => {
  process.stdout.write(chunk);
  output += chunk.toString('utf8');
  if (graceTimer === undefined && /^ {2}Duration: {2}\S+$/m.test(output)) {
    graceTimer = setTimeout(
      () => void endTree(`uvu had not exited ${graceMs} ms after printing its totals`, true),
      graceMs,
    );
  }
});
const outputClosed = new Promise<void>((resolve) => child.stdout.once('close', resolve));
let exitedUvu = false;
const uvuExited = new Promise<void>((resolve) =>
  child.once('exit', () => {
    exitedUvu = true;
    resolve();
  }),
);

interface Proc {
  readonly pid: number;
  readonly ppid: number;
  readonly pgrp: number;
  /** Start time in clock ticks since boot: with the pid, it names one process (pids are reused). */
  readonly start: string;
}

/** Every process now, from /proc (Linux; none elsewhere, where only uvu's group is signalled). */
const processes = (): Proc[] => {
  if (process.platform !== 'linux') return [];
  const found: Proc[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      // After the command name (in parentheses, which may hold anything): state, ppid, pgrp, ... starttime (22nd).
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (fields[0] === 'Z') continue;
      found.push({ pid: Number(name), ppid: Number(fields[1]), pgrp: Number(fields[2]), start: fields[19] ?? '' });
    } catch {
      // gone meanwhile
    }
  }
  return found;
};

/**
 * uvu and what it started: its descendants, and every process in its process group or in the group of a descendant
 * that leads one (a process whose parent has exited is no longer uvu's descendant, but stays in its group).
 */
const uvuTree = (): Proc[] => {
  if (uvuPid === undefined) return [];
  const all = processes();
  const tree = new Map<number, Proc>();
  const add = (p: Proc) => {
    if (p.pid === process.pid || tree.has(p.pid)) return;
    tree.set(p.pid, p);
    for (const c of all) if (c.ppid === p.pid) add(c);
  };
  for (const p of all) if (p.pid === uvuPid) add(p);
  const groups = new Set([uvuPid, ...[...tree.values()].filter((p) => p.pgrp === p.pid).map((p) => p.pid)]);
  for (const p of all) if (groups.has(p.pgrp)) add(p);
  return [...tree.values()];
};

const describe = (p: Proc): string => {
  try {
    return `${p.pid} ${readFileSync(`/proc/${p.pid}/cmdline`, 'utf8').split('\0').join(' ').trim()}`;
  } catch {
    return String(p.pid);
  }
};

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
/** How long the runner waits for the processes it SIGKILLed to be gone. */
const KILL_WAIT_MS = 5000;

let ending: Promise<void> | undefined;
/** Whether the runner had to end what outlived the run (counted as a failure when no test failed). */
let leftOver = false;
/**
 * Ends uvu and everything it started: SIGTERM to uvu (its exit hooks stop what they know of), then SIGKILL to every
 * process of its tree seen before or after that is still the same process. `counts`: what was left is a test's fault.
 */
const endTree = (why: string, counts: boolean): Promise<void> =>
  (ending ??= (async () => {
    const before = uvuTree();
    const others = before.filter((p) => p.pid !== uvuPid);
    if (counts) leftOver = true;
    process.stdout.write(
      `\n${why}; ending it and what it started${others.length === 0 ? '' : `, still running:\n${others.map((p) => `  ${describe(p)}`).join('\n')}`}\n`,
    );
    if (!exitedUvu && uvuPid !== undefined) {
      try {
        process.kill(uvuPid, 'SIGTERM');
      } catch {
        // gone meanwhile
      }
      await Promise.race([uvuExited, sleep(TERM_MS)]);
    }
    const seen = new Map([...before, ...uvuTree()].map((p) => [p.pid, p]));
    /** Those seen that still run as the same process (not exited, pid not reused). */
    const alive = () => {
      const now = new Map(processes().map((p) => [p.pid, p]));
      return [...seen.values()].filter((p) => now.get(p.pid)?.start === p.start);
    };
    for (const p of alive()) {
      try {
        process.kill(p.pid, 'SIGKILL');
      } catch {
        // gone meanwhile, or not ours to signal
      }
    }
    if (uvuPid !== undefined) {
      try {
        process.kill(-uvuPid, 'SIGKILL');
      } catch {
        // the group is empty
      }
    }
    // A SIGKILLed process has not ended when kill() returns (a loaded machine tears a large one down later): the run
    // ends once they have, so that nothing it started outlives it (bounded: what cannot be killed is not waited on).
    for (let waited = 0; waited < KILL_WAIT_MS && alive().length > 0; waited += 20) await sleep(20);
    // uvu's output ends when the last process holding it has gone; one this runner could not see must not hold it.
    await Promise.race([outputClosed, sleep(1000)]);
    finish(child.exitCode, child.signalCode);
  })());

// uvu has exited but its output stays open: something it started holds it (and would hold the run).
child.once('exit', () => {
  setTimeout(() => void endTree('uvu exited, but something it started still holds its output', true), 1000).unref();
});
child.once('close', (code, signal) => {
  if (ending === undefined) finish(code, signal);
});
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
  process.once(signal, () => void endTree(`the test run got ${signal}`, false));
}

let finished = false;
function finish(code: number | null, signal: NodeJS.Signals | null): void {
  if (finished) return;
  finished = true;
  clearTimeout(graceTimer);
  // uvu's own totals close its output: the last match, since a test's output (a failure quoting another run, say)
  // may hold lines of the same shape before them.
  const count = (label: string): number | undefined => {
    const m = [...output.matchAll(new RegExp(`^\\s*${label}:\\s+(\\d+)`, 'gm'))].at(-1);
    return m?.[1] === undefined ? undefined : Number(m[1]);
  };
  const total = count('Total');
  const passed = count('Passed');
  const skipped = count('Skipped') ?? 0;
  if (total === undefined || passed === undefined) {
    process.stdout.write(`\nthe test run ended early (exit ${code ?? signal}) before uvu printed its totals\n`);
    process.stdout.write(
      `${passed ?? 0} passed, ${Math.max(1, (total ?? 0) - (passed ?? 0))} failed, ${skipped} skipped\n`,
    );
    process.exit(1);
  }
  if (total === 0 && process.argv[2] !== undefined) {
    // A pattern that matches no file runs nothing; "0 passed, 0 failed" would read as a success.
    process.stdout.write(
      `no test file matches ${JSON.stringify(pattern)}: it is a regular expression on paths under dist/test, ` +
        `for example 'bootstrap/config\\.test\\.js$'\n0 passed, 1 failed, 0 skipped\n`,
    );
    process.exit(1);
  }
  const failedTests = total - passed;
  if (leftOver && failedTests === 0) {
    process.stdout.write('every test passed, but one left something running: counted as one failure\n');
  }
  const failed = leftOver ? Math.max(1, failedTests) : failedTests;
  process.stdout.write(`${passed} passed, ${failed} failed, ${skipped} skipped\n`);
  // uvu ended by this runner exits by its signal or SIGTERM's exit: its totals and what was left decide then.
  process.exit(failed > 0 || (ending === undefined && code !== 0) ? 1 : 0);
}
