import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { WORST_CASE_BYTES_PER_PLANT } from '../../adapters/storage/memory/capacity.js';
import { distRoot } from '../support/process.js';

/**
 * The constant the in-memory store's default bound is derived from holds: worst-case plants, decoded by the HTTP
 * edge's own code, never cost more heap than it says, and the store refuses the plant past its bound.
 */
const test = suite('bench/memory-bound (worst-case heap per plant)');

test('worst-case plants cost at most WORST_CASE_BYTES_PER_PLANT of heap, and one past the bound is refused', async () => {
  const child = spawn(process.execPath, ['--expose-gc', join(distRoot, 'bench/memory-bound.js'), '20000']);
  let out = '';
  let err = '';
  child.stdout.on('data', (c: Buffer) => (out += c.toString()));
  child.stderr.on('data', (c: Buffer) => (err += c.toString()));
  const code = await new Promise((resolve) => child.on('exit', resolve));
  assert.is(code, 0, err);
  const figures = JSON.parse(out) as { plants: number; bytesPerPlant: number; refusedBeyond: boolean };
  assert.is(figures.plants, 20000);
  assert.ok(
    figures.bytesPerPlant > 1000 && figures.bytesPerPlant <= WORST_CASE_BYTES_PER_PLANT,
    `measured ${figures.bytesPerPlant} bytes per plant; the constant says ${WORST_CASE_BYTES_PER_PLANT}`,
  );
  assert.ok(figures.refusedBeyond, 'the plant past the bound is refused with StorageFull');
});

test.run();
