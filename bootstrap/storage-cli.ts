import './require-supported-node.js';
import { parseArgs } from 'node:util';
import { timings } from '../adapters/storage/mongodb/quota.js';
import { ConfigError, loadConfig } from './config.js';

const USAGE = `usage: STORAGE=mongodb MONGODB_URI=mongodb://... npm run storage -- repair [--keep-first]
  repair        mends what the service logs it cannot rebuild by itself (plants that share a key of a unique index,
                written while the index was missing), then builds the missing indexes. Idempotent and resumable: run it
                again until it says "repair done". Plants sharing a slot are kept and moved outside (they count);
                identical copies of a plant are deleted; different plants under one id are listed and left, unless
  --keep-first  then the later ones are printed and deleted.
The database is the configured one: MONGODB_URI and MONGODB_DB, as the service reads them.`;

const main = async (): Promise<number> => {
  let parsed;
  try {
    parsed = parseArgs({
      args: process.argv.slice(2),
      options: { 'keep-first': { type: 'boolean' }, help: { type: 'boolean' } },
      allowPositionals: true,
      strict: true,
    });
  } catch (e) {
    process.stderr.write(`${e instanceof Error ? e.message : String(e)}\n${USAGE}\n`);
    return 2;
  }
  if (parsed.values.help === true) {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  if (parsed.positionals.length !== 1 || parsed.positionals[0] !== 'repair') {
    process.stderr.write(`${USAGE}\n`);
    return 2;
  }
  let storage;
  try {
    storage = loadConfig(process.env).storage;
  } catch (e) {
    if (e instanceof ConfigError) {
      process.stderr.write(`${e.message}\n`);
      return 2;
    }
    throw e;
  }
  if (storage.kind !== 'mongodb') {
    process.stderr.write('the repair is for STORAGE=mongodb (with MONGODB_URI and MONGODB_DB)\n');
    return 2;
  }
  const { repairStorage } = await import('../adapters/storage/mongodb/repair.js');
  const outcome = await repairStorage({
    uri: storage.uri,
    db: storage.db,
    noticeMs: timings(storage.timeoutMs).repairWaitMs,
    keepFirst: parsed.values['keep-first'] === true,
    report: (line) => process.stdout.write(`${line}\n`),
  });
  return outcome.conflicts > 0 ? 1 : 0;
};

main().then(
  (code) => process.exit(code),
  (e: unknown) => {
    process.stderr.write(`repair failed: ${e instanceof Error ? e.message : String(e)}\n`);
    process.exit(1);
  },
);
