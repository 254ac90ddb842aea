/**
 * `node dist/bench/compare.js <distA> <distB> [get|post|both] [rounds] [seconds]`: two builds of the service (two
 * `dist/` folders, say before and after a change) side by side on this machine, driven alternately (A B A B) like
 * the benchmark's service and floor, and compared by server CPU per request (the process's own CPU time over the
 * requests served) and req/s, with medians. This is how each optimization's effect was measured.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { join, resolve } from 'node:path';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort } from '../harness/servers.js';
import { cpuSecondsOf } from './cpu.js';
import { serviceEnv, TOKEN } from './service-env.js';

const [distA, distB] = [resolve(process.argv[2] ?? ''), resolve(process.argv[3] ?? '')];
const which = process.argv[4] ?? 'both';
const rounds = Number(process.argv[5] ?? 5);
const seconds = Number(process.argv[6] ?? 5);
const here = join(dirname(fileURLToPath(import.meta.url)), '..');

const children: ChildProcess[] = [];
process.on('exit', () => children.forEach((c) => c.kill('SIGKILL')));

const start = async (dist: string) => {
  const port = await freePort();
  const child = spawn(process.execPath, [join(dist, 'bootstrap/main.js')], {
    env: { PATH: process.env['PATH'] ?? '', ...serviceEnv(port) },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  children.push(child);
  for (let i = 0; ; i++) {
    try {
      if ((await fetch(`http://127.0.0.1:${port}/healthz`)).status < 500) break;
    } catch {
      if (i > 100) throw new Error(`${dist} did not start`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  for (let id = 0; id < 1000; id++) {
    const res = await fetch(`http://127.0.0.1:${port}/plants`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
      body: `{"id":${id},"name":"plant ${id}","tag":"seed"}`,
    });
    if (res.status !== 200) throw new Error(`seeding answered ${res.status}`);
    await res.arrayBuffer();
  }
  return { port, child };
};

const drive = (server: { port: number; child: ChildProcess }, method: 'GET' | 'POST', secs: number, firstId: number) =>
  new Promise<{ rps: number; cpuUs: number; bad: number }>((resolveLoad, reject) => {
    const spec = {
      url: `http://127.0.0.1:${server.port}${method === 'GET' ? '/plants?limit=20' : '/plants'}`,
      token: TOKEN,
      method,
      seconds: secs,
      connections: 32,
      firstId,
    };
    const before = cpuSecondsOf(server.child.pid) ?? 0;
    const child = spawn(process.execPath, [join(here, 'bench/load.js'), JSON.stringify(spec)], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    child.on('exit', (code) => {
      if (code !== 0) return reject(new Error(`load exited ${code}`));
      const r = JSON.parse(out) as { rps: number; requests: number; bad: number };
      const cpuUs = (((cpuSecondsOf(server.child.pid) ?? 0) - before) * 1e6) / r.requests;
      resolveLoad({ rps: r.rps, cpuUs, bad: r.bad });
    });
  });

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? (s[m] as number) : ((s[m - 1] as number) + (s[m] as number)) / 2;
};

const a = await start(distA);
const b = await start(distB);
console.log(`A ${distA}\nB ${distB}\n${rounds} rounds of ${seconds} s, 32 connections, alternating`);
for (const method of which === 'both'
  ? (['GET', 'POST'] as const)
  : which === 'post'
    ? (['POST'] as const)
    : (['GET'] as const)) {
  await drive(a, method, 2, 900_000_000);
  await drive(b, method, 2, 900_000_000);
  const cpu: [number[], number[]] = [[], []];
  for (let round = 1; round <= rounds; round++) {
    const ra = await drive(a, method, seconds, 1_000_000_000 * round);
    const rb = await drive(b, method, seconds, 1_000_000_000 * round);
    cpu[0].push(ra.cpuUs);
    cpu[1].push(rb.cpuUs);
    console.log(
      `  ${method} round ${round}: A ${ra.cpuUs.toFixed(1)} µs/req ${ra.rps.toFixed(0)} req/s${ra.bad ? ` (${ra.bad} bad)` : ''}   B ${rb.cpuUs.toFixed(1)} µs/req ${rb.rps.toFixed(0)} req/s${rb.bad ? ` (${rb.bad} bad)` : ''}`,
    );
  }
  const [ma, mb] = [median(cpu[0]), median(cpu[1])];
  const [ba, bb] = [Math.min(...cpu[0]), Math.min(...cpu[1])];
  console.log(
    `  ${method} best cpu (least disturbed by other load): A ${ba.toFixed(1)} µs, B ${bb.toFixed(1)} µs, B-A ${(bb - ba).toFixed(1)} µs`,
  );
  console.log(
    `  ${method} median cpu: A ${ma.toFixed(1)} µs, B ${mb.toFixed(1)} µs, B-A ${(mb - ma).toFixed(1)} µs (${((100 * (mb - ma)) / ma).toFixed(0)} %)`,
  );
}
process.exit(0);
