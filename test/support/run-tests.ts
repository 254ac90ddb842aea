/**
 * `npm test`: runs every uvu suite under dist/test (compiled by the pretest type-check), then prints one line
 * `N passed, N failed, N skipped`. Failures are counted as tests run minus tests passed: uvu counts a suite whose
 * `before` hook threw as run and not passed, without failing the run, so its own exit code is not enough.
 */
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const testDir = join(here, '..');
// uvu's main module is dist/index.js; its CLI sits beside dist/.
const uvuBin = join(dirname(createRequire(import.meta.url).resolve('uvu')), '..', 'bin.js');
const pattern = process.argv[2] ?? '\\.test\\.js$';

const child = spawn(process.execPath, [uvuBin, testDir, pattern, '--no-color'], {
  stdio: ['ignore', 'pipe', 'inherit'],
});
let output = '';
child.stdout.on('data', (chunk: Buffer) => {
  process.stdout.write(chunk);
  output += chunk.toString('utf8');
});

child.on('close', (code, signal) => {
  const count = (label: string): number | undefined => {
    const m = new RegExp(`^\\s*${label}:\\s+(\\d+)`, 'm').exec(output);
    return m?.[1] === undefined ? undefined : Number(m[1]);
  };
  const total = count('Total');
  const passed = count('Passed');
  const skipped = count('Skipped') ?? 0;
  if (total === undefined || passed === undefined) {
    process.stdout.write(`\nthe test run ended early (exit ${code ?? signal}) before uvu printed its totals\n`);
    process.stdout.write(
      `${passed ?? 0} passed, ${Math.max(1, (total ?? 0) - (passed ?? 0))} failed, ${skipped} skipped\n`,
    );
    process.exit(1);
  }
  const failed = total - passed;
  process.stdout.write(`${passed} passed, ${failed} failed, ${skipped} skipped\n`);
  process.exit(failed > 0 || code !== 0 ? 1 : 0);
});
