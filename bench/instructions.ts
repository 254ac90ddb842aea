/**
 * `node dist/bench/instructions.js get|post <target> [requests] [warm-up requests]`: instructions per request of one
 * server, counted by valgrind's callgrind (user space only, every thread; the kernel's part, the syscalls, is not
 * counted). A target is a build of the service (a `dist/` folder) or a reference server (a `.mjs` file), as for
 * compare.js. An instruction count moves less than CPU time with what else the machine is doing, but not nothing: on
 * 2026-11-24, with the machine's load changing between 6 and 18, runs of one build differed by 3% at one connection
 * and by up to 25% between runs at different loads (V8's concurrent GC threads and time-based work, and how many
 * requests share a turn of the event loop): repeat a count, and compare builds counted at the same time.
 *
 * The server runs under callgrind with instrumentation off (about 5x slower than native) while it is seeded with
 * 1,000 plants and warmed (the JIT compiles what the load runs hot); then counting is switched on for exactly
 * `requests` requests (default 5,000, 8 connections, bench/load.js) and the total is divided by them. Under
 * valgrind the server is slower than its clients, so more requests are read per turn of the event loop than natively:
 * costs paid per turn rather than per request come out smaller than they are at a lower load.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { copyFileSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { freePort } from '../harness/servers.js';
import { dist as here, serviceEnv, TOKEN } from './harness.js';

const route = process.argv[2] === 'post' ? 'POST' : 'GET';
const target = resolve(process.argv[3] ?? '');
const requests = Number(process.argv[4] ?? 5000);
const warmUp = Number(process.argv[5] ?? 20000);
/** Fewer than the CPU bench's 32: under valgrind a request takes milliseconds, and autocannon gives up after 10 s. */
const connections = Number(process.env['CONNECTIONS'] ?? 8);
/**
 * V8 flags of the counted server: by default `--single-threaded` (no concurrent compiler or GC threads: V8 compiles and
 * collects on the main thread, so when code gets optimized, and how much GC work is done, no longer depends on how
 * busy the machine's other cores are; on 2026-11-25 a build's count moved from 180,101 to 280,202 between a load average
 * of 6 and 14 without it, mostly compiler and GC threads). NODE_FLAGS='' counts with V8's defaults.
 */
const nodeFlags = (process.env['NODE_FLAGS'] ?? '--single-threaded').split(' ').filter((f) => f !== '');
/**
 * CACHE_SIM=1: callgrind also simulates the caches and the branch predictor (valgrind's model: 32 KiB L1 for code and
 * for data, one last level) and prints their misses per request beside the instructions. Two servers can run nearly the
 * same instructions and differ much more in CPU time: on 2026-11-27 a GET of the service ran 1.13 times the contract
 * floor's instructions, 1.32 times its L1 code misses, 1.46 times its L1 data misses and 1.40 times its mispredicted
 * branches, and 1.33 times its CPU time (docs/performance.md, round 6). Slower than a plain count (about 1.5 times).
 */
const cacheSim = process.env['CACHE_SIM'] === '1';
const project = resolve(here, '..');

const workDir = mkdtempSync(join(tmpdir(), 'plant-store-callgrind-'));
const children: ChildProcess[] = [];
process.on('exit', () => {
  children.forEach((c) => c.kill('SIGKILL'));
  rmSync(workDir, { recursive: true, force: true });
});
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => process.exit(1));

const port = await freePort();
const server = spawn(
  'valgrind',
  [
    '--tool=callgrind',
    ...(cacheSim ? ['--cache-sim=yes', '--branch-sim=yes'] : []),
    '--smc-check=all-non-file', // V8 writes the code it runs
    '--instr-atstart=no',
    `--callgrind-out-file=${join(workDir, 'callgrind.out.%p')}`,
    process.execPath,
    ...nodeFlags,
    target.endsWith('.mjs') ? target : join(target, 'bootstrap/main.js'),
  ],
  {
    env: { PATH: process.env['PATH'] ?? '', ...serviceEnv(port), PROJECT: project },
    stdio: ['ignore', 'ignore', 'pipe'],
  },
);
children.push(server);
let stderr = '';
server.stderr?.on('data', (c: Buffer) => (stderr += c.toString()));

for (let i = 0; ; i++) {
  try {
    if ((await fetch(`http://127.0.0.1:${port}/healthz`)).status < 600) break;
  } catch {
    if (i > 600) throw new Error(`${target} did not start under valgrind:\n${stderr}`);
    await new Promise((r) => setTimeout(r, 200));
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

const drive = (amount: number, firstId: number) =>
  new Promise<{ requests: number; bad: number }>((resolveLoad, reject) => {
    const spec = {
      url: `http://127.0.0.1:${port}${route === 'GET' ? '/plants?limit=20' : '/plants'}`,
      token: TOKEN,
      method: route,
      seconds: 0,
      connections,
      amount,
      firstId,
    };
    const child = spawn(process.execPath, [join(here, 'bench/load.js'), JSON.stringify(spec)], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    children.push(child);
    let out = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    child.on('exit', (code) =>
      code === 0
        ? resolveLoad(JSON.parse(out) as { requests: number; bad: number })
        : reject(new Error(`load exited ${code}`)),
    );
  });

const control = (...args: string[]) => {
  // valgrind names its control pipes after the HOST in its environment, the service's HOST here: so must vgdb.
  const out = spawnSync('callgrind_control', [...args, String(server.pid)], {
    encoding: 'utf8',
    env: { ...process.env, HOST: serviceEnv(port)['HOST'] },
  });
  if (out.status !== 0) throw new Error(`callgrind_control ${args.join(' ')}: ${out.stderr}`);
  if (process.env['DEBUG_CALLGRIND'] !== undefined) console.error(args, out.stdout, out.stderr);
};

await drive(warmUp, 100_000_000);
control('-i', 'on');
control('-z');
const counted = await drive(requests, 200_000_000);
control('-d');
control('-i', 'off');

// The dump is written when the server next runs (it may be waiting in epoll): poke it until the file is there.
let dump: string | undefined;
for (let i = 0; dump === undefined; i++) {
  dump = readdirSync(workDir).find((f) => /\.\d+\.\d+$/.test(f));
  if (dump !== undefined) break;
  if (i > 100) throw new Error(`callgrind wrote no dump: ${readdirSync(workDir).join(', ')}\n${stderr}`);
  await fetch(`http://127.0.0.1:${port}/healthz`).catch(() => undefined);
  await new Promise((r) => setTimeout(r, 200));
}
const text = readFileSync(join(workDir, dump), 'utf8');
// KEEP_DUMP=<file>: the dump is kept there, for callgrind_annotate (functions by instructions).
if (process.env['KEEP_DUMP'] !== undefined) copyFileSync(join(workDir, dump), process.env['KEEP_DUMP']);
const totals = /^(?:summary|totals): ([\d ]+)$/m.exec(text);
if (totals === null) throw new Error('no totals in the dump');
const counts = (totals[1] ?? '').split(' ').map(Number);
const ir = counts[0] ?? 0;
console.log(
  `${route} ${target}: ${counted.requests} requests (${counted.bad} not 2xx), ${(ir / counted.requests).toFixed(0)} instructions per request`,
);
if (cacheSim) {
  // The dump names its counters in order (Ir Dr Dw I1mr D1mr D1mw ILmr DLmr DLmw Bc Bcm Bi Bim).
  const names = (/^events: (.+)$/m.exec(text)?.[1] ?? '').split(' ');
  const per = (name: string) => (counts[names.indexOf(name)] ?? NaN) / counted.requests;
  console.log(
    `  per request: L1 code misses ${per('I1mr').toFixed(0)}, L1 data misses ${(per('D1mr') + per('D1mw')).toFixed(0)}` +
      ` (reads ${per('D1mr').toFixed(0)}), mispredicted branches ${(per('Bcm') + per('Bim')).toFixed(0)}` +
      ` (indirect ${per('Bim').toFixed(0)}), last-level misses ${(per('ILmr') + per('DLmr') + per('DLmw')).toFixed(0)}`,
  );
}
process.exit(0);
