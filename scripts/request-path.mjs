// The project's files and functions one request runs through, counted by V8's precise coverage (call counts, function
// granularity) in the real service (dist/bootstrap/main.js, memory store, one static token, the quota on, pino at
// info): after warm-up, the counters are reset, one request is sent and answered, and every function of the project
// that ran at least once in between is counted (dependencies are counted apart). Usage:
//   node scripts/request-path.mjs [dist directory, default dist] > /dev/null   (the counts go to stderr)
import { Session } from 'node:inspector/promises';
import { createServer } from 'node:net';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

const dist = resolve(process.argv[2] ?? 'dist');
const root = pathToFileURL(dist).href + '/';
const freePort = () =>
  new Promise((done) => {
    const probe = createServer().listen(0, '127.0.0.1', () => {
      const { port } = probe.address();
      probe.close(() => done(port));
    });
  });
const port = await freePort();
const token = 'path-token';
Object.assign(process.env, {
  PORT: String(port),
  HOST: '127.0.0.1',
  LOG_LEVEL: 'info',
  STORAGE: 'memory',
  AUTH: 'static',
  AUTH_TOKENS: JSON.stringify([{ token, owner: 'o', subject: 's', scopes: ['plants:read', 'plants:write'] }]),
  MAX_PLANTS_PER_OWNER: '10000000',
});

const session = new Session();
session.connect();
await session.post('Profiler.enable');
await session.post('Profiler.startPreciseCoverage', { callCount: true, detailed: false });
await import(`${root}bootstrap/main.js`);

const base = `http://127.0.0.1:${port}`;
const auth = { authorization: `Bearer ${token}` };
for (let i = 0; ; i++) {
  try {
    if ((await fetch(`${base}/healthz`)).ok) break;
  } catch {
    await new Promise((r) => setTimeout(r, 20));
  }
  if (i > 500) throw new Error('the service did not start');
}
let next = 1;
const requests = {
  create: () =>
    fetch(`${base}/plants`, {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json' },
      body: JSON.stringify({ id: next++, name: 'Fern', tag: 'indoor' }),
    }),
  list: () => fetch(`${base}/plants?limit=20`, { headers: auth }),
  delete: () => fetch(`${base}/plants/${next - 1}`, { method: 'DELETE', headers: auth }),
};
const counts = async (print = false) => {
  const { result } = await session.post('Profiler.takePreciseCoverage');
  const mine = { files: new Set(), functions: 0 };
  const deps = { files: new Set(), functions: 0 };
  for (const script of result) {
    if (!script.url.startsWith(root) && !script.url.includes('/node_modules/')) continue;
    const into = script.url.includes('/node_modules/') ? deps : mine;
    for (const fn of script.functions) {
      if (fn.ranges[0].count === 0 || (fn.functionName === '' && fn.ranges[0].startOffset === 0)) continue;
      into.files.add(
        script.url.slice(
          script.url.indexOf(script.url.includes('/node_modules/') ? '/node_modules/' : root) +
            (script.url.startsWith(root) ? root.length : 0),
        ),
      );
      into.functions += 1;
      if (print && process.env.LIST_FUNCTIONS && into === mine)
        process.stdout.write(`${script.url.slice(root.length)} ${fn.functionName} ${fn.ranges[0].count}\n`);
    }
  }
  return { mine, deps };
};
const out = {};
for (const [name, send] of Object.entries(requests)) {
  for (let i = 0; i < 50; i++) {
    await (await requests.create()).arrayBuffer();
    if (name !== 'create') await (await send()).arrayBuffer();
  }
  if (name === 'delete') await (await requests.create()).arrayBuffer(); // the plant deleted next
  await new Promise((r) => setTimeout(r, 50));
  await counts();
  const res = await send();
  await res.arrayBuffer();
  await new Promise((r) => setTimeout(r, 50));
  const { mine, deps } = await counts(true);
  out[name] = {
    status: res.status,
    files: mine.files.size,
    functions: mine.functions,
    depFiles: deps.files.size,
    depFunctions: deps.functions,
    list: [...mine.files].sort(),
  };
}
for (const [name, o] of Object.entries(out)) {
  process.stderr.write(
    `${name} (${o.status}): ${o.files} project files, ${o.functions} project functions; dependencies ${o.depFiles} files, ${o.depFunctions} functions\n  ${o.list.join(' ')}\n`,
  );
}
process.exit(0);
