// `npm start` and `npm run token`: node scripts/launch.mjs dist/<entry>.js [args...]
// Builds first only when a source is newer than dist/ (scripts/build.mjs), then runs the entry point in this same
// process, so that the signals npm forwards reach the service itself (package.json starts this with `exec`, so no
// shell stays in between either). Production runs `node dist/bootstrap/main.js` directly (see README).
// On a Node.js older than the supported lines (24, 26), as a machine's own may be, it runs itself again on Node.js 26
// LTS from scripts/install-node26.sh (fetched once, then reused), so that the README's commands work there too.
import { execFileSync, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { abortBuild, ensureBuilt, root } from './build.mjs';

if (Number(process.versions.node.split('.')[0]) < 24) {
  process.stderr.write(
    `Node.js ${process.versions.node} is older than 24: running on Node.js 26 (scripts/install-node26.sh)\n`,
  );
  const install = join(root, 'scripts/install-node26.sh');
  const bin = execFileSync('bash', [install], { stdio: ['ignore', 'pipe', 'inherit'] })
    .toString()
    .trim()
    .split('\n')
    .pop();
  const env = { ...process.env, PATH: `${bin}:${process.env.PATH ?? ''}` };
  const child = spawn(join(bin, 'node'), process.argv.slice(1), { stdio: 'inherit', env });
  // The signals npm forwards go on to the service, which drains and exits; this process exits as it does.
  for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => child.kill(signal));
  child.on('exit', (code, signal) => process.exit(code ?? (signal === null ? 1 : 0)));
  await new Promise(() => undefined);
}

const [entry] = process.argv.splice(2, 1);
if (entry === undefined) {
  process.stderr.write('usage: node scripts/launch.mjs dist/<entry>.js [args...]\n');
  process.exit(2);
}

// A signal during the build stops it: nothing was serving yet, so this is an ordinary shutdown.
const stopBuild = () => {
  abortBuild();
  process.exit(0);
};
process.on('SIGINT', stopBuild);
process.on('SIGTERM', stopBuild);

try {
  await ensureBuilt();
} catch (e) {
  process.stderr.write(`build: ${e instanceof Error ? e.message : String(e)}\n`);
  process.exit(1);
}

// An unsupported Node.js is refused with one line before the entry point's modules are even linked (a Node.js too
// old to link them would otherwise fail with a linker error instead).
await import(pathToFileURL(resolve(root, 'dist/bootstrap/require-supported-node.js')).href);

// A first run of `npm start` with no token configured gets one made here, shown on stderr (never in the log stream on
// stdout) and handed to the service as its hash; the service itself, started directly, refuses to start without one.
const env = process.env;
const unset = (name) => (env[name] ?? '') === '';
if (
  entry.endsWith('bootstrap/main.js') &&
  (unset('AUTH') || env.AUTH === 'static') &&
  unset('AUTH_TOKENS') &&
  unset('AUTH_TOKENS_FILE')
) {
  const { newToken } = await import(pathToFileURL(resolve(root, 'dist/adapters/tokens/redis/new-token.js')).href);
  const token = newToken();
  const sha256 = createHash('sha256').update(token).digest('hex');
  env.AUTH_TOKENS = JSON.stringify([
    { sha256, owner: 'local', subject: 'local', scopes: ['plants:read', 'plants:write'] },
  ]);
  process.stderr.write(
    `No AUTH_TOKENS configured: generated a token for this run (owner "local", scopes plants:read plants:write):\n${token}\n` +
      (unset('STORAGE') || env.STORAGE === 'memory'
        ? 'In-memory storage: every plant is lost when the service stops.\n'
        : ''),
  );
}

// The entry point sees the argv it would see when run as `node dist/<entry>.js args...`.
process.argv[1] = resolve(root, entry);
// The service's own signal handlers (bootstrap/signals.js) take over before its module graph loads.
if (entry.endsWith('bootstrap/main.js')) await import(pathToFileURL(resolve(root, 'dist/bootstrap/signals.js')).href);
process.off('SIGINT', stopBuild);
process.off('SIGTERM', stopBuild);
await import(pathToFileURL(resolve(root, entry)).href);
