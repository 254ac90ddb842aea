// Builds dist/ from the TypeScript sources with tsc, under a lock so that two builds from one checkout never race.
//   node scripts/build.mjs          a clean build (dist/ emptied first) of everything, tests and benches included
//                                   (tsconfig.json): `npm run build`, and `npm test` before it runs
//   node scripts/build.mjs --production
//                                   a clean build of what runs in production only (tsconfig.production.json: domain,
//                                   application, adapters, bootstrap): `npm run build:production`, the Dockerfile
//   import { ensureBuilt }          builds only when a source is newer than the last build (scripts/launch.mjs); where
//                                   TypeScript is not installed (dev dependencies pruned) it runs dist/ as built
// A build writes dist/.build-stamp, dated when the build started, so that a source saved during a build is seen as
// newer next time.
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, readdirSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const dist = join(root, 'dist');
const stamp = join(dist, '.build-stamp');
const lock = join(root, '.build-lock');

/** The folders tsc compiles (tsconfig.json's `include`), and the files that change what it emits. */
const sourceRoots = () => {
  try {
    const { include } = JSON.parse(readFileSync(join(root, 'tsconfig.json'), 'utf8'));
    if (Array.isArray(include)) return include;
  } catch {
    // fall through to the layout this project has
  }
  return ['domain', 'application', 'adapters', 'bootstrap', 'test', 'bench'];
};

const newestIn = (path) => {
  let stat;
  try {
    stat = statSync(path);
  } catch {
    return 0;
  }
  if (!stat.isDirectory()) return path.endsWith('.ts') || path.endsWith('.json') ? stat.mtimeMs : 0;
  let newest = stat.mtimeMs; // a deleted or renamed source changes its folder's time
  for (const entry of readdirSync(path)) newest = Math.max(newest, newestIn(join(path, entry)));
  return newest;
};

/** Whether dist/ is missing or older than a source, tsconfig.json or the installed packages. */
export const isStale = () => {
  if (!existsSync(stamp)) return true;
  const built = statSync(stamp).mtimeMs;
  const inputs = [...sourceRoots(), 'tsconfig.json', 'package-lock.json'].map((p) => join(root, p));
  return inputs.some((p) => newestIn(p) > built);
};

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

const alive = (pid) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return e.code === 'EPERM';
  }
};

let held = false;
const release = () => {
  if (held) rmSync(lock, { recursive: true, force: true });
  held = false;
};
process.once('exit', release);

/** Takes the checkout's build lock (a directory, created atomically), waiting while a live process holds it. */
const acquire = async () => {
  let told = false;
  for (;;) {
    try {
      mkdirSync(lock);
      held = true;
      writeFileSync(join(lock, 'pid'), String(process.pid));
      return;
    } catch (e) {
      if (e.code !== 'EEXIST') throw e;
    }
    let holder = NaN;
    try {
      holder = Number(readFileSync(join(lock, 'pid'), 'utf8'));
    } catch {
      // being created right now, or left without a pid by a process that died at that instant
    }
    const age = (() => {
      try {
        return Date.now() - statSync(lock).mtimeMs;
      } catch {
        return 0;
      }
    })();
    if ((Number.isInteger(holder) && holder > 0 && !alive(holder)) || (!Number.isInteger(holder) && age > 30_000)) {
      rmSync(lock, { recursive: true, force: true }); // left by a build that was killed
      continue;
    }
    if (!told) {
      process.stderr.write(`waiting for the build running in process ${holder} to finish\n`);
      told = true;
    }
    await sleep(200);
  }
};

let compiling;
/** Stops a compile in progress (on a signal during the build). */
export const abortBuild = () => {
  compiling?.kill('SIGTERM');
  release();
};

/** tsc's path, or undefined where TypeScript is not installed (a production install: `npm prune --omit=dev`). */
const tscPath = () => {
  try {
    return createRequire(join(root, 'package.json')).resolve('typescript/bin/tsc');
  } catch {
    return undefined;
  }
};

const compile = (project) =>
  new Promise((resolve, reject) => {
    const tsc = tscPath();
    if (tsc === undefined) {
      reject(new Error('typescript is not installed: run `npm ci` (with dev dependencies) to build'));
      return;
    }
    compiling = spawn(process.execPath, [tsc, '-p', join(root, project)], { cwd: root, stdio: 'inherit' });
    compiling.once('error', reject);
    compiling.once('exit', (code, signal) => {
      compiling = undefined;
      if (code === 0) resolve();
      else reject(new Error(`tsc failed (${signal ?? `exit ${code}`})`));
    });
  });

const build = async ({ clean, project = 'tsconfig.json' }) => {
  const startedAt = new Date();
  if (clean) rmSync(dist, { recursive: true, force: true });
  else rmSync(stamp, { force: true });
  await compile(project);
  mkdirSync(dist, { recursive: true });
  writeFileSync(stamp, `built ${startedAt.toISOString()}\n`);
  utimesSync(stamp, startedAt, startedAt);
};

/** Builds when a source is newer than the last build; returns at once (a few ms of stat calls) when dist/ is fresh. */
export const ensureBuilt = async () => {
  if (!isStale()) return;
  if (tscPath() === undefined) {
    // A production install: `npm prune --omit=dev` removed TypeScript (and touched package-lock.json, which made the
    // build look stale). What was built is what runs; without a build there is nothing to run.
    if (!existsSync(stamp)) {
      throw new Error(
        'dist/ is not built and TypeScript is not installed: build before pruning dev dependencies (npm ci && npm run build:production)',
      );
    }
    process.stderr.write('TypeScript is not installed (production install): running dist/ as built\n');
    return;
  }
  await acquire();
  try {
    if (!isStale()) return; // another process built it while this one waited
    process.stderr.write('sources changed since the last build: compiling (tsc)\n');
    await build({ clean: false });
  } finally {
    release();
  }
};

/** A clean build: stale outputs of deleted sources go too. `production`: only what runs in production. */
export const cleanBuild = async ({ production = false } = {}) => {
  await acquire();
  try {
    await build({ clean: true, project: production ? 'tsconfig.production.json' : 'tsconfig.json' });
  } finally {
    release();
  }
};

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) {
  for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => (abortBuild(), process.exit(130)));
  cleanBuild({ production: process.argv.includes('--production') }).catch((e) => {
    process.stderr.write(`build: ${e.message}\n`);
    process.exit(1);
  });
}
