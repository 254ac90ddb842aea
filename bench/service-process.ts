/**
 * The start-up the bound benches share: the service of a `dist/` folder in its own process on a free loopback port
 * (memory store, LOG_LEVEL=warn, `env` on top), once /healthz answers; its stdout gathered, its RSS read from /proc.
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { freePort } from '../harness/servers.js';
import { join } from 'node:path';

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export const startServiceProcess = async (dist: string, env: Record<string, string>, nodeArgs: string[] = []) => {
  const port = await freePort();
  const child = spawn(process.execPath, [...nodeArgs, join(dist, 'bootstrap/main.js')], {
    env: { PATH: process.env['PATH'] ?? '', PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let logged = '';
  child.stdout.on('data', (chunk: Buffer) => (logged += chunk.toString()));
  process.on('exit', () => child.kill('SIGKILL'));
  for (let i = 0; ; i++) {
    try {
      if ((await fetch(`http://127.0.0.1:${port}/healthz`)).status === 200) break;
    } catch {
      if (i > 100) throw new Error('the service did not start');
      await sleep(100);
    }
  }
  const pid = child.pid as number;
  return {
    base: `http://127.0.0.1:${port}`,
    port,
    child,
    logged: () => logged,
    rssMiB: (): number => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]) / 1024,
  };
};
