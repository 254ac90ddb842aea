/**
 * The real service (bootstrap's buildApp, memory storage, static token, pino at info to /dev/null) with N plants
 * seeded for one owner through the storage port, to measure list latency against the owner's plant count.
 * Arguments: port, N, token.
 */
import { pino } from 'pino';
import { memoryPlantRepository } from '../adapters/storage/memory/memory-plant-repository.js';
import { sha256, staticTokenVerifier } from '../adapters/tokens/static/static-token-verifier.js';
import { buildApp } from '../bootstrap/build-app.js';
import type { Owner, PlantId, PlantName } from '../domain/plant.js';

const [port, count, token] = [Number(process.argv[2]), Number(process.argv[3]), process.argv[4] ?? 'bench-token'];
const owner = 'bench' as Owner;
const plants = memoryPlantRepository();
for (let i = 0; i < count; i++) {
  await plants.insert(owner, { id: BigInt(i) as PlantId, name: `plant ${i}` as PlantName })();
}
const server = buildApp({
  plants,
  tokens: staticTokenVerifier([
    { sha256: sha256(token), principal: { owner, subject: 'bench', scopes: new Set(['plants:read', 'plants:write']) } },
  ]),
  logger: pino({ level: 'info' }, pino.destination({ dest: '/dev/null', sync: false })),
  bodyLimit: 16384,
});
server.listen(port, '127.0.0.1', () => process.stdout.write('listening\n'));
process.on('SIGTERM', () => server.close(() => process.exit(0)));
