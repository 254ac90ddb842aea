/**
 * `node dist/bench/compare.js <A> <B> [<C> ...] [get|post|both] [rounds] [seconds]`: servers side by side on this
 * machine, driven in turn round by round (A B C A B C ...), and compared by server CPU per request (the process's own
 * CPU time over the requests served) and req/s, with medians. A target is a build of the service (a `dist/` folder:
 * its bootstrap/main.js runs as the bench runs it) or a reference server (a `.mjs` file, such as
 * ../shared/bench/contract-floor-server.mjs or a Fastify peer's server.mjs, run with PORT, HOST, AUTH_TOKENS and
 * PROJECT, this project, from which the contract floor loads pino). Each target after the first is compared with A:
 * per round, B/A of the CPU per request, and the median of those ratios (steadier than the ratio of medians on a busy
 * machine, where a round's load touches every server of the round alike). RATE=<req/s> drives each server with an
 * open load at that rate instead of saturating it (see `rate` below).
 */
import type { ChildProcess } from 'node:child_process';
import { basename, join, resolve } from 'node:path';
import { freePort } from '../harness/servers.js';
import { dist, median, runLoad, serviceEnv, startServer, TOKEN } from './harness.js';

const args = process.argv.slice(2);
const firstOption = args.findIndex((a) => /^(get|post|both|\d+(\.\d+)?)$/.test(a));
const targets = (firstOption < 0 ? args : args.slice(0, firstOption)).map((t) => resolve(t));
const [which = 'both', roundsArg = '5', secondsArg = '5'] = firstOption < 0 ? [] : args.slice(firstOption);
const rounds = Number(roundsArg);
const seconds = Number(secondsArg);
/**
 * RATE=<req/s>: every server gets the same open load at that rate instead of as many requests as it serves. Saturated,
 * a slower server also pays the kernel's cost of waking the load generator on more of its writes (it finds it idle
 * more often), which a server answering at the same rate does not.
 */
const rate = process.env['RATE'] === undefined ? undefined : Number(process.env['RATE']);
const project = resolve(dist, '..');
if (targets.length < 2) throw new Error('usage: compare.js <A> <B> [<C> ...] [get|post|both] [rounds] [seconds]');

interface Target {
  readonly name: string;
  readonly port: number;
  readonly child: ChildProcess;
}

const start = async (target: string, name: string): Promise<Target> => {
  const port = await freePort();
  const reference = target.endsWith('.mjs');
  const child = await startServer(
    [reference ? target : join(target, 'bootstrap/main.js')],
    { ...serviceEnv(port), PROJECT: project },
    port,
  );
  for (let id = 0; id < 1000; id++) {
    const res = await fetch(`http://127.0.0.1:${port}/plants`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
      body: `{"id":${id},"name":"plant ${id}","tag":"seed"}`,
    });
    if (res.status !== 200) throw new Error(`seeding ${target} answered ${res.status}`);
    await res.arrayBuffer();
  }
  return { name, port, child };
};

const drive = async (server: Target, method: 'GET' | 'POST', secs: number, firstId: number) => {
  const url = `http://127.0.0.1:${server.port}${method === 'GET' ? '/plants?limit=20' : '/plants'}`;
  const spec = {
    url,
    token: TOKEN,
    method,
    seconds: secs,
    connections: 32,
    firstId,
    ...(rate === undefined ? {} : { rate }),
  };
  const r = await runLoad(spec, server.child);
  return { rps: r.rps, cpuUs: r.cpuUs ?? NaN, bad: r.bad };
};

const names = targets.map((_, i) => String.fromCharCode(65 + i));
const servers: Target[] = [];
for (const [i, target] of targets.entries()) servers.push(await start(target, names[i] as string));
for (const [i, target] of targets.entries()) console.log(`${names[i]} ${target}`);
console.log(`${rounds} rounds of ${seconds} s, 32 connections${rate === undefined ? '' : `, ${rate} req/s`}, in turn`);
const methods =
  which === 'both' ? (['GET', 'POST'] as const) : which === 'post' ? (['POST'] as const) : (['GET'] as const);
for (const method of methods) {
  for (const server of servers) await drive(server, method, 2, 900_000_000);
  const cpu = servers.map((): number[] => []);
  for (let round = 1; round <= rounds; round++) {
    const line: string[] = [];
    for (const [i, server] of servers.entries()) {
      const r = await drive(server, method, seconds, 1_000_000_000 * round);
      cpu[i]?.push(r.cpuUs);
      line.push(
        `${server.name} ${r.cpuUs.toFixed(1)} µs/req ${r.rps.toFixed(0)} req/s${r.bad ? ` (${r.bad} bad)` : ''}`,
      );
    }
    console.log(`  ${method} round ${round}: ${line.join('   ')}`);
  }
  const [first = [], ...rest] = cpu;
  console.log(
    `  ${method} median cpu: ${cpu.map((c, i) => `${names[i]} ${median(c).toFixed(1)} µs`).join(', ')}; best: ${cpu.map((c, i) => `${names[i]} ${Math.min(...c).toFixed(1)}`).join(', ')}`,
  );
  for (const [j, c] of rest.entries()) {
    const ratios = c.map((x, round) => x / (first[round] as number));
    console.log(
      `  ${method} ${names[j + 1]}/A (${basename(targets[j + 1] as string)} / ${basename(targets[0] as string)}): ` +
        `median of rounds' ratios ${median(ratios).toFixed(2)} (range ${Math.min(...ratios).toFixed(2)}-${Math.max(...ratios).toFixed(2)}), ` +
        `ratio of medians ${(median(c) / median(first)).toFixed(2)}, ${names[j + 1]}-A ${(median(c) - median(first)).toFixed(1)} µs`,
    );
  }
}
process.exit(0);
