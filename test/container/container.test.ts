import { spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFileSync, rmSync } from 'node:fs';
import { connect, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as assert from 'uvu/assert';
import { distRoot } from '../support/process.js';
import { suiteWith, type Setup } from '../support/suites.js';
import { eventually, sleep } from '../support/wait.js';

/**
 * The Dockerfile and compose.yaml as users get them, built and run with podman (offline: test/container/images.sh
 * builds the base images, and compose.offline.yaml puts FerretDB and Debian's redis-server in place of the mongo and
 * redis images, and FerretDB's flags in place of mongod's; nothing else). The image alone: non-root, healthy,
 * create/list/delete through the published port. The stack, with secrets made by scripts/compose-secrets.sh: up and
 * ready without any backend healthcheck run (mongo-init does the set-up), least privilege in every container, only the
 * API published and /metrics on its own unpublished port; a token issued with the CLI inside the service's container
 * works, a client without the Redis password cannot write one and a client without MongoDB credentials cannot read
 * plants; a plant and a token that survive a restart of the whole stack (mongo-init run again, changing nothing);
 * SIGTERM within the shutdown bound; nothing left after it is taken down. Whatever happens, the teardown removes every
 * container, network, volume, image tag and secret this suite made. It prints its timings.
 */
const root = join(distRoot, '..');
const here = join(root, 'test', 'container');
const project = `plant-store-ci-${process.pid}`;
const alone = `${project}-alone`;
// A tag of this run's own (compose.yaml's `image:` is ${PLANT_STORE_IMAGE:-plant-store:latest}), so that runs from two
// checkouts sharing one podman store never run each other's image.
const image = `localhost/${project}:latest`;
const secrets = join(tmpdir(), `${project}-secrets`); // made by scripts/compose-secrets.sh in the setup
const network = `${project}_default`;
const composeFiles = ['-f', join(root, 'compose.yaml'), '-f', join(here, 'compose.offline.yaml')];
const env = {
  ...process.env,
  CONTAINERS_CONF: process.env['CONTAINERS_CONF'] ?? join(here, 'containers.conf'),
  BUILDAH_FORMAT: 'docker', // the OCI format would drop the HEALTHCHECK
  PLANT_STORE_IMAGE: image,
  PLANT_STORE_SECRETS: secrets,
};

interface Ran {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs a command to its end (at most `timeoutMs`); resolves with its exit code and output. */
const run$ = (command: string, args: string[], extraEnv: Record<string, string> = {}, timeoutMs = 300_000) =>
  new Promise<Ran>((resolve) => {
    const child = spawn(command, args, { cwd: root, env: { ...env, ...extraEnv }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });

/** Like run$, but a non-zero exit is an error carrying the output. */
const must = async (command: string, args: string[], extraEnv: Record<string, string> = {}): Promise<string> => {
  const r = await run$(command, args, extraEnv);
  if (r.code !== 0) throw new Error(`${command} ${args.join(' ')} exited ${r.code}:\n${r.stdout}\n${r.stderr}`);
  return r.stdout;
};
const podman = (...args: string[]) => must('podman', args);

const seconds = (since: number) => ((Date.now() - since) / 1000).toFixed(1);
const say = (line: string) => process.stdout.write(`\n  container: ${line}`);

/** Runs the container's healthcheck (nothing schedules it without systemd) until it passes; the seconds it took. */
const healthy = async (container: string, withinMs = 60_000): Promise<number> => {
  const started = Date.now();
  for (;;) {
    const r = await run$('podman', ['healthcheck', 'run', container]);
    if (r.code === 0) return (Date.now() - started) / 1000;
    if (Date.now() - started > withinMs) {
      const logs = await run$('podman', ['logs', '--tail', '20', container]);
      throw new Error(
        `${container} not healthy in ${withinMs} ms: ${r.stdout}${r.stderr}\n${logs.stdout}${logs.stderr}`,
      );
    }
    await sleep(500); // the polling interval (each poll runs the healthcheck in the container)
  }
};

const freePort = () =>
  new Promise<number>((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });

const ids = async (kind: 'ps' | 'volume' | 'network'): Promise<string[]> => {
  const filter = ['--filter', `label=io.podman.compose.project=${project}`];
  const args = kind === 'ps' ? ['ps', '-a', '-q', ...filter] : [kind, 'ls', '-q', ...filter];
  return (await podman(...args)).split('\n').filter((l) => l !== '');
};

/** Everything this suite may have made, removed; failures here are reported, not thrown. */
const removeAll = async (): Promise<void> => {
  await run$('podman', ['rm', '-f', '-t', '0', alone]);
  await run$('podman-compose', ['-p', project, ...composeFiles, 'down', '-v'], { PLANT_STORE_PORT: '0' });
  for (const id of await ids('ps')) await run$('podman', ['rm', '-f', '-t', '0', id]);
  for (const id of await ids('volume')) await run$('podman', ['volume', 'rm', '-f', id]);
  // podman-compose 1.0 leaves the project's network behind on `down` (docker compose removes it).
  for (const id of await ids('network')) await run$('podman', ['network', 'rm', '-f', id]);
  await run$('podman', ['rmi', '-f', image]);
  rmSync(secrets, { recursive: true, force: true });
};

const missing = ['podman', 'runc', 'podman-compose', 'debootstrap', 'go'].filter(
  (tool) => spawnSync('sh', ['-c', `command -v ${tool}`]).status !== 0,
);
const setup: Setup<{ teardown: () => Promise<void> }> =
  process.env['PLANT_STORE_CONTAINER_TEST'] === '0'
    ? { skip: 'PLANT_STORE_CONTAINER_TEST=0 (.ci/run runs this suite once, in the Node.js 24 run)' }
    : missing.length > 0 && process.env['CI'] !== 'true'
      ? { skip: `${missing.join(', ')} not installed (apt-get install podman runc podman-compose debootstrap; Go)` }
      : async () => {
          if (missing.length > 0) throw new Error(`CI=true and ${missing.join(', ')} not installed`);
          let started = Date.now();
          const images = await run$('bash', [join(here, 'images.sh')]);
          if (images.code !== 0) throw new Error(`images.sh failed:\n${images.stderr}`);
          say(`base images ready in ${seconds(started)} s${images.stderr === '' ? ' (cached)' : ''}\n${images.stderr}`);
          started = Date.now();
          await podman('build', '--quiet', '-t', image, root);
          const size = (await podman('image', 'inspect', '--format', '{{.Size}}', image)).trim();
          say(`image ${image} built in ${seconds(started)} s, ${(Number(size) / 1e6).toFixed(0)} MB`);
          say((await must('sh', [join(root, 'scripts', 'compose-secrets.sh'), secrets])).trim());
          return { teardown: removeAll };
        };

const { test, run } = suiteWith('container image and compose stack (podman)', setup);

const TOKEN = 'container-test-token';
let stackPort = 0;
let stackToken = '';
const service = `${project}_plant-store_1`;

const api = (port: number, token: string, path: string, init: RequestInit = {}) =>
  fetch(`http://127.0.0.1:${port}${path}`, {
    ...init,
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
  });

/** The paths (a.b.c) at which two JSON values differ. */
const differences = (a: unknown, b: unknown, path = ''): string[] => {
  if (typeof a === 'object' && a !== null && typeof b === 'object' && b !== null && !Array.isArray(a)) {
    const keys = [...new Set([...Object.keys(a), ...Object.keys(b)])].sort();
    return keys.flatMap((k) =>
      differences(
        (a as Record<string, unknown>)[k],
        (b as Record<string, unknown>)[k],
        path === '' ? k : `${path}.${k}`,
      ),
    );
  }
  return JSON.stringify(a) === JSON.stringify(b) ? [] : [path];
};

test("compose.yaml is valid as `docker compose config` reads it, and what CI runs differs from it in mongo's image and command and redis's image only", async () => {
  const binary = join(secrets, 'compose-config');
  await must('go', ['build', '-C', join(here, 'compose-config'), '-o', binary, '.']);
  const config = async (...files: string[]) => {
    const r = await run$(binary, files);
    assert.is(r.code, 0, `${files.join(' + ')}: ${r.stderr}`);
    return JSON.parse(r.stdout) as { services: Record<string, unknown> };
  };
  const shipped = await config(join(root, 'compose.yaml'));
  assert.equal(Object.keys(shipped.services).sort(), ['mongo', 'mongo-init', 'plant-store', 'redis']);
  const ci = await config(join(root, 'compose.yaml'), join(here, 'compose.offline.yaml'));
  assert.equal(differences(shipped, ci), ['services.mongo.command', 'services.mongo.image', 'services.redis.image']);
});

test('the image runs as a non-root user, declares its healthcheck, and holds dist/ for production only', async () => {
  assert.is((await podman('image', 'inspect', '--format', '{{.Config.User}}', image)).trim(), 'node');
  assert.match(await podman('image', 'inspect', '--format', '{{json .HealthCheck}}', image), /\/healthz/);
  const inside = await podman(
    'run',
    '--rm',
    image,
    'sh',
    '-c',
    'id -u; ls dist; test -e node_modules/typescript && echo typescript; true',
  );
  const [uid, ...rest] = inside.trim().split('\n');
  assert.is.not(uid, '0');
  assert.equal(rest, ['adapters', 'application', 'bootstrap', 'domain']);
});

test('run alone with --init: the healthcheck turns healthy, and create, list and delete work on the published port', async () => {
  await podman(
    'run',
    '-d',
    '--init',
    '--name',
    alone,
    '-p',
    '127.0.0.1::3000',
    '-e',
    `AUTH_TOKENS=${JSON.stringify([{ token: TOKEN, owner: 'o', subject: 's', scopes: ['plants:read', 'plants:write'] }])}`,
    image,
  );
  const took = await healthy(alone);
  say(`alone: healthy ${took.toFixed(1)} s after start`);
  assert.is((await podman('inspect', '--format', '{{.State.Health.Status}}', alone)).trim(), 'healthy');
  assert.is.not((await podman('exec', alone, 'id', '-u')).trim(), '0', 'the service process is not root');
  const alonePort = Number(/:(\d+)\s*$/.exec((await podman('port', alone, '3000')).trim())?.[1]);
  const created = await api(alonePort, TOKEN, '/plants', { method: 'POST', body: '{"id": 7, "name": "Fern"}' });
  assert.is(created.status, 200);
  assert.equal(await created.json(), { name: 'Fern' });
  const listed = await api(alonePort, TOKEN, '/plants');
  assert.equal(await listed.json(), [{ name: 'Fern' }]);
  assert.is((await api(alonePort, TOKEN, '/plants/7', { method: 'DELETE' })).status, 204);
  assert.equal(await (await api(alonePort, TOKEN, '/plants')).json(), []);
  await podman('rm', '-f', '-t', '0', alone);
});

const compose = (...args: string[]) =>
  must('podman-compose', ['-p', project, ...composeFiles, ...args], { PLANT_STORE_PORT: String(stackPort) });
const container = (name: string) => `${project}_${name}_1`;
const inspect = async (name: string, format: string) => (await podman('inspect', '--format', format, name)).trim();

/** GET /metrics on METRICS_PORT (9464, not published) from inside the service's container. */
const scrape = async () => {
  const out = await podman(
    'exec',
    service,
    'node',
    '-e',
    "fetch('http://127.0.0.1:9464/metrics').then(async (r) => console.log(JSON.stringify({ status: String(r.status), body: await r.text() })))",
  );
  const { status, body } = JSON.parse(out) as { status: string; body: string };
  return { status, body, inFlight: /^http_requests_in_flight (\d+)/m.exec(body)?.[1] };
};

/** Waits for mongo-init to exit and returns its log; its exit code must be 0. */
const mongoInitDone = async (): Promise<string> => {
  const code = (await podman('wait', container('mongo-init'))).trim();
  const logs = await run$('podman', ['logs', container('mongo-init')]);
  assert.is(code, '0', `mongo-init exited ${code}:\n${logs.stdout}${logs.stderr}`);
  return logs.stdout;
};

/** Up, then ready: mongo-init done and /readyz 200; no backend healthcheck is run (nothing schedules one here). */
const upAndReady = async (): Promise<string> => {
  const started = Date.now();
  await compose('up', '-d');
  const init = await mongoInitDone();
  await healthy(service);
  await eventually(
    'the service is ready',
    async () => (await fetch(`http://127.0.0.1:${stackPort}/readyz`)).status === 200,
    { timeoutMs: 60_000, everyMs: 250 },
  );
  say(`stack: up and ready in ${seconds(started)} s`);
  return init;
};

test('compose up with the secrets: mongo-init initiates and creates the user, and the service is ready without a backend healthcheck', async () => {
  stackPort = await freePort();
  const init = await upAndReady();
  assert.match(init, /createUser: plantstore \(in plantstore\)/);
  assert.not.match(init, /pass|[0-9a-f]{64}/i, 'no password in the log');
  assert.is(
    (await podman('exec', container('redis'), 'redis-cli', 'ping')).trim(),
    'NOAUTH Authentication required.',
    'Redis refuses a client without the password',
  );
  const redisUrl = readFileSync(join(secrets, 'redis_url'), 'utf8').trim();
  const appendonly = await podman(
    'exec',
    container('redis'),
    'redis-cli',
    '--no-auth-warning',
    '-u',
    redisUrl,
    'config',
    'get',
    'appendonly',
  );
  assert.match(appendonly, /NOPERM/, "the service's Redis user cannot run CONFIG");
  // init: true: an init is PID 1 and Node.js its child, so that SIGTERM reaches a process with a handler.
  const pid1 = (await podman('top', service, 'pid', 'args')).split('\n').find((l) => /^\s*1\s/.test(l));
  assert.match(pid1 ?? '', /init\b.*node dist\/bootstrap\/main\.js/);
});

test('least privilege: read-only root filesystems, no capability, no new privileges, no root, only the API published', async () => {
  for (const name of ['plant-store', 'mongo-init', 'mongo', 'redis']) {
    const c = container(name);
    assert.is(await inspect(c, '{{.HostConfig.ReadonlyRootfs}}'), 'true', `${name}: read-only root filesystem`);
    assert.is(await inspect(c, '{{.EffectiveCaps}}'), '[]', `${name}: no capability`);
    assert.match(await inspect(c, '{{.HostConfig.SecurityOpt}}'), /no-new-privileges/, `${name}: no new privileges`);
    assert.is.not(await inspect(c, '{{.Config.User}}'), '', `${name}: a user of its own`);
  }
  for (const name of ['plant-store', 'mongo', 'redis']) {
    const uid = (await podman('exec', container(name), 'sh', '-c', 'id -u; grep ^NoNewPrivs /proc/1/status')).trim();
    assert.match(uid, /^(1000|999)\nNoNewPrivs:\s+1$/, `${name}: ${uid}`);
  }
  assert.match((await podman('port', service)).trim(), /^3000\/tcp -> 0\.0\.0\.0:\d+$/, 'the API port alone');
  for (const name of ['mongo', 'redis', 'mongo-init']) {
    assert.is((await podman('port', container(name))).trim(), '', `${name} publishes nothing`);
  }
  assert.is((await fetch(`http://127.0.0.1:${stackPort}/metrics`)).status, 404, '/metrics is not on the API port');
  const { status, body } = await scrape();
  assert.is(status, '200', 'METRICS_PORT answers inside the network');
  assert.match(body, /^plantstore_/m);
});

test('a token issued with the CLI inside the container creates a plant, counted by the rate limiter in Redis', async () => {
  const issued = await podman(
    'exec',
    service,
    'node',
    'dist/bootstrap/token-cli.js',
    'issue',
    '--owner',
    'acme',
    '--subject',
    'ops',
    '--scopes',
    'plants:read,plants:write',
  );
  stackToken = issued.trim().split('\n').at(-1) ?? '';
  assert.match(stackToken, /^[A-Za-z0-9_-]{43}$/);
  const created = await api(stackPort, stackToken, '/plants', {
    method: 'POST',
    body: '{"id": 1, "name": "Monstera"}',
  });
  assert.is(created.status, 200, await created.text());
  // Counted by the rate limiter in Redis (EVAL, allowed to the service's user): a limiter that cannot run lets the
  // request through without these.
  assert.is(created.headers.get('ratelimit-limit'), '600');
  assert.is(created.headers.get('ratelimit-remaining'), '599');
});

test('a neighbour on the compose network without the passwords can neither mint a token in Redis nor read plants in MongoDB', async () => {
  // A token as docs/tokens.md lays it out: one HSET would make it valid on an open Redis.
  const forged = 'forged-token-forged-token-forged-token-forg';
  const key = `plantstore:token:${createHash('sha256').update(forged).digest('hex')}`;
  const neighbour = ['run', '--rm', '--network', network, '--cap-drop', 'ALL'];
  const hset = await podman(
    ...neighbour,
    'localhost/plant-store-ci/redis:2',
    'redis-cli',
    '-h',
    'redis',
    'HSET',
    key,
    'owner',
    'acme',
    'subject',
    'mallory',
    'scopes',
    'plants:read plants:write',
  );
  assert.match(hset, /NOAUTH/);
  assert.is((await api(stackPort, forged, '/plants')).status, 401, 'the forged token is not valid');
  const find = await run$('podman', [
    ...neighbour,
    image,
    'node',
    '-e',
    "import('mongodb').then(async ({ MongoClient }) => { const c = new MongoClient('mongodb://mongo:27017/?directConnection=true', { serverSelectionTimeoutMS: 5000 }); try { console.log(JSON.stringify(await c.db('plantstore').collection('plants').find().toArray())); } catch (e) { console.log('refused', e.codeName); } finally { await c.close(); } })",
  ]);
  assert.is(find.stdout.trim(), 'refused Unauthorized', find.stdout + find.stderr);
});

test('a plant and its token survive a restart of the whole stack; mongo-init runs again and only updates the user', async () => {
  const started = Date.now();
  await compose('down'); // the volumes stay
  assert.is((await run$('podman', ['container', 'exists', service])).code, 1);
  const init = await upAndReady();
  say(`stack: down and up again in ${seconds(started)} s`);
  assert.match(init, /replica set rs0 already initiated/);
  assert.match(init, /updateUser: plantstore \(in plantstore\)/);
  const listed = await api(stackPort, stackToken, '/plants');
  assert.is(listed.status, 200);
  assert.equal(await listed.json(), [{ name: 'Monstera' }]);
});

test('SIGTERM through the init drains the request in flight, then the container exits 0 before its shutdown bound', async () => {
  const body = '{"id": 2, "name": "Late"}';
  const busy = connect(stackPort, '127.0.0.1');
  await new Promise((r) => busy.once('connect', r));
  let answer = '';
  busy.on('data', (c: Buffer) => (answer += c.toString()));
  const closed = new Promise((r) => busy.once('close', r));
  busy.write(
    `POST /plants HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${stackToken}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n`,
  );
  // The headers are read: in flight, waiting for its body (the gauge counts the API listener's requests only).
  await eventually('the create is in flight', async () => Number((await scrape()).inFlight) >= 1, { everyMs: 200 });
  const started = Date.now();
  const stopped = podman('stop', '-t', '30', service);
  await eventually(
    'the service logs that it is stopping',
    async () => /"msg":"stopping/.test((await run$('podman', ['logs', service])).stdout),
    { everyMs: 100 },
  );
  busy.write(body);
  await closed;
  await stopped;
  const tookMs = Date.now() - started;
  say(`stack: service stopped ${tookMs} ms after SIGTERM, the request in flight answered`);
  assert.match(answer, /^HTTP\/1\.1 200 OK/, answer);
  assert.is((await podman('inspect', '--format', '{{.State.ExitCode}}', service)).trim(), '0');
  const logs = await run$('podman', ['logs', '--tail', '5', service]);
  assert.match(logs.stdout, /"signal":"SIGTERM"[^\n]*"msg":"stopping/);
  assert.match(logs.stdout, /"msg":"in-flight requests finished"/);
  assert.match(logs.stdout, /"msg":"stopped"/);
});

test('down -v takes everything down: no container, network or volume of the stack is left', async () => {
  await compose('down', '-v');
  for (const id of await ids('network')) await podman('network', 'rm', id); // podman-compose 1.0 leaves it
  assert.equal(await ids('ps'), []);
  assert.equal(await ids('volume'), []);
  assert.equal(await ids('network'), []);
  assert.is((await run$('podman', ['container', 'exists', alone])).code, 1);
});

run();
