import { spawn, spawnSync } from 'node:child_process';
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  rmSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as assert from 'uvu/assert';
import { distRoot } from '../support/process.js';
import { suiteWith } from '../support/suites.js';

/**
 * scripts/build.mjs on a checkout of its own (a one-file TypeScript project beside a copy of the script): it builds
 * only when a source is newer than the last build, and two builds started at once from one checkout never race.
 */
const root = join(distRoot, '..');

const { test, subject, run } = suiteWith('build when needed, under a lock', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'build-'));
  mkdirSync(join(dir, 'scripts'));
  mkdirSync(join(dir, 'src'));
  copyFileSync(join(root, 'scripts', 'build.mjs'), join(dir, 'scripts', 'build.mjs'));
  symlinkSync(join(root, 'node_modules'), join(dir, 'node_modules'));
  writeFileSync(join(dir, 'package.json'), '{"type":"module"}\n');
  writeFileSync(
    join(dir, 'tsconfig.json'),
    JSON.stringify({
      compilerOptions: {
        module: 'NodeNext',
        target: 'ES2022',
        outDir: 'dist',
        rootDir: '.',
        types: [],
        skipLibCheck: true,
      },
      include: ['src'],
    }),
  );
  writeFileSync(join(dir, 'src', 'a.ts'), 'export const a: number = 1;\n');
  return { dir, teardown: async () => rmSync(dir, { recursive: true, force: true }) };
});

/** One `ensureBuilt()` in a process of its own; resolves with its exit code and stderr. */
const ensureBuilt = (dir: string): Promise<{ code: number | null; stderr: string }> =>
  new Promise((resolve) => {
    const child = spawn(
      process.execPath,
      ['--input-type=module', '-e', "await (await import('./scripts/build.mjs')).ensureBuilt()"],
      { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] },
    );
    let stderr = '';
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    child.on('exit', (code) => resolve({ code, stderr }));
  });

const compiles = (stderr: string) => (stderr.match(/compiling/g) ?? []).length;

test('two starts at once from an unbuilt checkout: one compiles, the other waits for it, both succeed', async (ctx) => {
  const { dir } = subject(ctx);
  const [first, second] = await Promise.all([ensureBuilt(dir), ensureBuilt(dir)]);
  assert.is(first.code, 0, first.stderr);
  assert.is(second.code, 0, second.stderr);
  assert.is(compiles(first.stderr + second.stderr), 1);
  assert.ok(existsSync(join(dir, 'dist', 'src', 'a.js')));
  assert.not.ok(existsSync(join(dir, '.build-lock')), 'the lock is released');
});

test('a fresh build is not compiled again; a changed source is', async (ctx) => {
  const { dir } = subject(ctx);
  assert.is(compiles((await ensureBuilt(dir)).stderr), 0);
  const later = new Date(Date.now() + 2000);
  utimesSync(join(dir, 'src', 'a.ts'), later, later);
  assert.is(compiles((await ensureBuilt(dir)).stderr), 1);
});

test('a lock left by a build that was killed is taken over', async (ctx) => {
  const { dir } = subject(ctx);
  const gone = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' });
  mkdirSync(join(dir, '.build-lock'));
  writeFileSync(join(dir, '.build-lock', 'pid'), gone.stdout);
  writeFileSync(join(dir, 'src', 'b.ts'), 'export const b = 2;\n');
  const result = await ensureBuilt(dir);
  assert.is(result.code, 0, result.stderr);
  assert.ok(existsSync(join(dir, 'dist', 'src', 'b.js')));
});

run();
