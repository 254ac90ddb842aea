import { spawn } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as assert from 'uvu/assert';
import { distRoot } from '../support/process.js';
import { suiteWith } from '../support/suites.js';

/**
 * The README's production recipe, on a scratch copy of this checkout (its sources, not its node_modules or dist):
 * `npm ci && npm run build:production && npm prune --omit=dev`, then `npm start`. The prune removes TypeScript and
 * rewrites package-lock.json, which makes the build look stale: `npm start` must run what was built, not try to
 * compile (and must not lose the build on the way).
 */
const root = join(distRoot, '..');
const TOKEN = 'production-recipe-token';
const left = new Set(['node_modules', 'dist', '.git', '.build-lock']);

interface Ran {
  readonly code: number | null;
  readonly out: string;
}

/** Runs npm with `args` in `cwd` to its end; resolves with its exit code and its stdout and stderr together. */
const runNpm = (cwd: string, args: string[]): Promise<Ran> =>
  new Promise((resolve) => {
    const child = spawn('npm', args, { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    child.stderr.on('data', (c: Buffer) => (out += c.toString()));
    child.once('close', (code) => resolve({ code, out }));
  });

const step = async (cwd: string, args: string[]): Promise<void> => {
  const { code, out } = await runNpm(cwd, args);
  if (code !== 0) throw new Error(`npm ${args.join(' ')} exited ${code}:\n${out}`);
};

const { test, subject, run } = suiteWith('production recipe (npm ci, build:production, prune, npm start)', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'production-'));
  try {
    cpSync(root, dir, { recursive: true, filter: (src) => !left.has(src.slice(root.length + 1)) });
    await step(dir, ['ci', '--prefer-offline', '--no-audit', '--no-fund']);
    await step(dir, ['run', 'build:production']);
    await step(dir, ['prune', '--omit=dev', '--no-audit', '--no-fund']);
  } catch (e) {
    rmSync(dir, { recursive: true, force: true });
    throw e;
  }
  return { dir, teardown: async () => rmSync(dir, { recursive: true, force: true }) };
});

test('the production build holds only what runs in production, and the prune removes TypeScript', (ctx) => {
  const { dir } = subject(ctx);
  assert.equal(readdirSync(join(dir, 'dist')).sort(), [
    '.build-stamp',
    'adapters',
    'application',
    'bootstrap',
    'domain',
  ]);
  assert.ok(existsSync(join(dir, 'dist', 'bootstrap', 'main.js')));
  assert.ok(existsSync(join(dir, 'dist', 'bootstrap', 'token-cli.js')));
  assert.not.ok(existsSync(join(dir, 'node_modules', 'typescript')), 'dev dependencies are pruned');
  assert.ok(existsSync(join(dir, 'node_modules', 'mongodb')), 'production dependencies stay');
});

test('npm start after the prune runs dist/ as built: /healthz answers 200, SIGTERM exits 0', async (ctx) => {
  const { dir } = subject(ctx);
  const child = spawn('npm', ['start'], {
    cwd: dir,
    env: {
      PATH: process.env['PATH'] ?? '',
      HOME: process.env['HOME'] ?? '/tmp',
      PORT: '0',
      HOST: '127.0.0.1',
      AUTH_TOKENS: JSON.stringify([{ token: TOKEN, owner: 'o', subject: 's', scopes: ['plants:read'] }]),
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stderr.on('data', (c: Buffer) => (err += c.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('close', resolve));
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`npm start did not listen in 30 s: ${out} ${err}`)), 30_000);
    child.stdout.on('data', (c: Buffer) => {
      out += c.toString();
      const line = /\{[^\n]*"msg":"listening"[^\n]*\}/.exec(out);
      if (line !== null) {
        clearTimeout(timer);
        resolve((JSON.parse(line[0]) as { port: number }).port);
      }
    });
    void exited.then(() => reject(new Error(`npm start exited before listening: ${out} ${err}`)));
  });
  try {
    assert.is((await fetch(`http://127.0.0.1:${port}/healthz`)).status, 200);
    const list = await fetch(`http://127.0.0.1:${port}/plants`, { headers: { authorization: `Bearer ${TOKEN}` } });
    assert.is(list.status, 200);
    assert.match(err, /TypeScript is not installed \(production install\): running dist\/ as built/);
    assert.not.match(err, /compiling/);
    assert.ok(existsSync(join(dir, 'dist', '.build-stamp')), 'the build stamp is kept');
  } finally {
    child.kill('SIGTERM');
  }
  assert.is(await exited, 0, err);
});

test('npm start with no build and no TypeScript says so in one line and exits 1', async (ctx) => {
  const { dir } = subject(ctx);
  rmSync(join(dir, 'dist'), { recursive: true, force: true });
  const { code, out } = await runNpm(dir, ['start']);
  assert.is.not(code, 0);
  assert.match(
    out,
    /^build: dist\/ is not built and TypeScript is not installed: build before pruning dev dependencies \(npm ci && npm run build:production\)$/m,
  );
});

run();
