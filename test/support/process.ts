import { spawn, type ChildProcess, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const distRoot = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

/**
 * Every child `runNode` started and that may still run (one started in a process group of its own stays listed after
 * it exits: what it left in its group is ended with it). When this process exits, however a test ended, whatever of
 * them still runs is killed (SIGKILL, the whole group for a child started with `group`), so a test that fails between
 * starting a process and stopping it leaves nothing running. The runner (run-tests.ts) loads this module into the uvu
 * process before any suite, and ends a uvu process that outlives its totals with SIGTERM: the handlers below make a
 * stop signal an exit, so that this hook and every other exit hook (the harness's servers and their directories) run.
 */
const started = new Set<{ readonly child: ChildProcess; readonly group: boolean }>();
const killStarted = () => {
  for (const { child, group } of started) {
    const pid = child.pid;
    if (pid === undefined) continue;
    try {
      if (group && processesInGroup(pid).length > 0) process.kill(-pid, 'SIGKILL');
      else if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    } catch {
      // gone meanwhile
    }
  }
  started.clear();
};
process.once('exit', killStarted);
for (const signal of ['SIGTERM', 'SIGINT'] as const) process.once(signal, () => process.exit());

export interface Started {
  readonly child: ChildProcessWithoutNullStreams;
  readonly stdout: () => string;
  readonly stderr: () => string;
  readonly exited: Promise<number | null>;
  /** Resolves with the first stdout line matching, or rejects when the process exits first or time runs out. */
  readonly waitFor: (pattern: RegExp, timeoutMs?: number) => Promise<RegExpExecArray>;
}

/**
 * Runs a compiled entry point (bootstrap/main.js, bootstrap/token-cli.js) with exactly the given environment.
 * `group`: in a process group of its own (its id is the child's pid), which every process it starts joins unless it
 * says otherwise, so that a test can find what the child left behind (`processesInGroup`).
 */
export const runNode = (
  script: string,
  env: Record<string, string>,
  args: string[] = [],
  { group = false }: { readonly group?: boolean } = {},
): Started => {
  const child = spawn(process.execPath, [join(distRoot, script), ...args], {
    env: { PATH: process.env['PATH'] ?? '', ...env },
    detached: group,
  });
  const entry = { child, group };
  started.add(entry);
  if (!group) child.once('exit', () => started.delete(entry));
  let out = '';
  let err = '';
  const waiters: Array<() => void> = [];
  child.stdout.on('data', (c: Buffer) => {
    out += c.toString('utf8');
    for (const w of waiters) w();
  });
  child.stderr.on('data', (c: Buffer) => {
    err += c.toString('utf8');
  });
  // 'close', not 'exit': the process has exited AND its stdout and stderr are read to the end, so a test that
  // awaits `exited` sees every line the process wrote.
  let closed = false;
  const exited = new Promise<number | null>((resolve) =>
    child.on('close', (code) => {
      closed = true;
      for (const w of waiters) w();
      resolve(code);
    }),
  );
  const waitFor = (pattern: RegExp, timeoutMs = 10_000) =>
    new Promise<RegExpExecArray>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`timed out waiting for ${pattern}; stdout: ${out}; stderr: ${err}`)),
        timeoutMs,
      );
      const check = () => {
        const m = pattern.exec(out);
        if (m) {
          clearTimeout(timer);
          resolve(m);
        } else if (closed) {
          clearTimeout(timer);
          reject(new Error(`exited ${child.exitCode} before ${pattern}; stdout: ${out}; stderr: ${err}`));
        }
      };
      waiters.push(check);
      check();
    });
  return { child, stdout: () => out, stderr: () => err, exited, waitFor };
};

/**
 * The processes still running (not zombies) in process group `pgid`, each as "pid command line" (Linux: /proc; an
 * empty list elsewhere).
 */
export const processesInGroup = (pgid: number): string[] => {
  if (process.platform !== 'linux') return [];
  const found: string[] = [];
  for (const pid of readdirSync('/proc').filter((name) => /^\d+$/.test(name))) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      // After the command name (in parentheses, which may hold anything): state, ppid, pgrp.
      const [state, , pgrp] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (Number(pgrp) !== pgid || state === 'Z') continue;
      found.push(`${pid} ${readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ').trim()}`);
    } catch {
      // gone meanwhile
    }
  }
  return found;
};

/** The resident memory of a process (Linux: /proc), in bytes. */
export const rssOf = (pid: number): number =>
  Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]) * 1024;
