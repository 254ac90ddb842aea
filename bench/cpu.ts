/**
 * A process's own CPU time (user + system, every thread), read from /proc/<pid>/stat on Linux: what a server spent
 * serving, whatever else the machine was doing. Load from other processes stretches wall time and req/s but hardly
 * the CPU time a request takes, so this is the figure to compare between rounds and runs.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

/** Clock ticks per second of /proc's times (USER_HZ): `getconf CLK_TCK`, 100 on every common Linux. */
const ticksPerSecond = ((): number => {
  const out = spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' });
  const n = Number(out.stdout?.trim());
  return Number.isInteger(n) && n > 0 ? n : 100;
})();

/** CPU seconds the process has used so far, or undefined where /proc is not available (not Linux, or it exited). */
export const cpuSecondsOf = (pid: number | undefined): number | undefined => {
  if (pid === undefined) return undefined;
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return undefined;
  }
  // The command name (field 2) is in parentheses and may hold spaces; fields after it start with the state (3).
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const utime = Number(fields[14 - 3]);
  const stime = Number(fields[15 - 3]);
  return Number.isFinite(utime) && Number.isFinite(stime) ? (utime + stime) / ticksPerSecond : undefined;
};
