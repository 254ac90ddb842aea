import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
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
const runAs = (version: string, script: string, args: string[] = []) =>
  new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
    const stub = `data:text/javascript,Object.defineProperty(process.versions,"node",{value:${JSON.stringify(version)}})`;
    const child = spawn(process.execPath, ['--import', stub, join(distRoot, script), ...args], {
      // A bad variable too: the version is checked before the configuration is read.
      env: { PATH: process.env['PATH'] ?? '', PORT: 'eighty', HOST: '127.0.0.1' },
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

test.run();
