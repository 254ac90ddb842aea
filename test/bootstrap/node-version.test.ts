import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { nodeVersionProblem, SUPPORTED_NODE } from '../../bootstrap/node-version.js';
import { distRoot } from '../support/process.js';

const test = suite('supported Node.js versions');

test('the supported lines are accepted: 24, 26 and later', () => {
  for (const v of ['24.0.0', '24.19.0', 'v24.1.5', '26.0.0-pre', '26.12.1', '27.0.0'])
    assert.is(nodeVersionProblem(v), undefined, v);
});

test('older releases, odd end-of-life lines and unreadable versions are refused with one line naming the range', () => {
  for (const v of [
    '18.20.4',
    '20.0.0',
    '20.20.2',
    '22.22.1',
    '25.1.0',
    '20.18.3',
    '21.7.3',
    '22.11.0',
    '23.11.1',
    '16.0.0',
    '',
    'twenty',
    '24',
    '24.1',
  ]) {
    const problem = nodeVersionProblem(v);
    assert.is(
      problem,
      `Node.js ${v} is not supported: Plant Store needs Node.js ${SUPPORTED_NODE} (production: 26 LTS)`,
      v,
    );
  }
});

test('package.json engines says the same range as the guard', () => {
  const pkg = JSON.parse(readFileSync(join(distRoot, '..', 'package.json'), 'utf8')) as { engines: { node: string } };
  assert.is(pkg.engines.node, SUPPORTED_NODE);
});

/** Runs a compiled entry point with process.versions.node made to read `version` before anything else loads. */
const runAs = (version: string, script: string, args: string[] = [], extraEnv: Record<string, string> = {}) =>
  new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
    const stub = `data:text/javascript,Object.defineProperty(process.versions,"node",{value:${JSON.stringify(version)}})`;
    const child = spawn(process.execPath, ['--import', stub, join(distRoot, script), ...args], {
      // A bad variable too: the version is checked before the configuration is read.
      env: { PATH: process.env['PATH'] ?? '', PORT: 'eighty', HOST: '127.0.0.1', ...extraEnv },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString('utf8')));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString('utf8')));
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });

const refusal = (v: string) =>
  `Node.js ${v} is not supported: Plant Store needs Node.js ${SUPPORTED_NODE} (production: 26 LTS)\n`;

test('the service process on an unsupported Node.js prints one line and exits 1 before reading its configuration', async () => {
  const { code, stdout, stderr } = await runAs('22.11.0', 'bootstrap/main.js');
  assert.is(code, 1);
  assert.is(stderr, refusal('22.11.0'));
  assert.is(stdout, '');
});

test('the token CLI and the npm scripts check refuse an unsupported Node.js the same way', async () => {
  for (const [script, args] of [
    ['bootstrap/token-cli.js', ['revoke', 'x']],
    ['bootstrap/require-supported-node.js', []],
  ] as const) {
    const { code, stdout, stderr } = await runAs('23.11.1', script, [...args]);
    assert.is(code, 1, script);
    assert.is(stderr, refusal('23.11.1'), script);
    assert.is(stdout, '', script);
  }
});

test('the npm scripts check lets a supported Node.js through silently', async () => {
  const { code, stdout, stderr } = await runAs('24.19.0', 'bootstrap/require-supported-node.js');
  assert.is(code, 0);
  assert.is(stdout + stderr, '');
});

test("on an older Node.js, npm's scripts run their entry point on Node.js 26 from scripts/install-node26.sh", async () => {
  // The entry prints the version it runs on; launch.mjs is started as npm starts it, on a Node.js that reads as 20.
  const dir = mkdtempSync(join(tmpdir(), 'launch-'));
  const entry = join(dir, 'print-version.mjs');
  writeFileSync(entry, 'process.stdout.write(process.versions.node);\n');
  try {
    // HOME (and XDG_CACHE_HOME) name the cache install-node26.sh fetches into once: the run's own, not a new one.
    const cache = Object.fromEntries(
      (['HOME', 'XDG_CACHE_HOME', 'PLANT_STORE_NODE26_DIR'] as const).flatMap((name) => {
        const value = process.env[name];
        return value === undefined ? [] : [[name, value]];
      }),
    );
    const { code, stdout, stderr } = await runAs('20.20.2', join('..', 'scripts', 'launch.mjs'), [entry], cache);
    assert.is(code, 0, stderr);
    assert.match(
      stderr,
      /^Node\.js 20\.20\.2 is older than 24: running on Node\.js 26 \(scripts\/install-node26\.sh\)\n/,
    );
    assert.match(stdout, /^26\.\d+\.\d+$/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test.run();
