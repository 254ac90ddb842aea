import { randomUUID } from 'node:crypto';
import * as E from 'fp-ts/lib/Either.js';
import type { TaskEither } from 'fp-ts/lib/TaskEither.js';
import type { Owner, Plant, PlantId, PlantName, PlantText } from '../../domain/plant.js';
import { SCOPES, type Principal, type Scope } from '../../domain/principal.js';

/** A fresh owner per test keeps tests independent on any store, without wiping it. */
export const freshOwner = (label = 'owner'): Owner => `${label}-${randomUUID()}` as Owner;

export const aPlant = (id: bigint, name = `plant ${id}`, tag?: string): Plant =>
  tag === undefined
    ? { id: id as PlantId, name: name as PlantName }
    : { id: id as PlantId, name: name as PlantName, tag: tag as PlantText<'tag'> };

export const principal = (owner: Owner = freshOwner(), scopes: readonly Scope[] = SCOPES): Principal => ({
  subject: `subject-of-${owner}`,
  owner,
  scopes: new Set(scopes),
});

/** Runs a TaskEither and returns its Right, failing the test on a Left. */
export const right = async <E, A>(te: TaskEither<E, A>): Promise<A> => {
  const result = await te();
  if (E.isLeft(result)) throw new Error(`expected success, got ${JSON.stringify(result.left)}`);
  return result.right;
};

/** Runs a TaskEither and returns its Left, failing the test on a Right. */
export const left = async <E, A>(te: TaskEither<E, A>): Promise<E> => {
  const result = await te();
  if (E.isRight(result)) throw new Error(`expected a failure, got ${String(result.right)}`);
  return result.left;
};

/** Deterministic shuffle (so a failure can be replayed). */
export const shuffled = <T>(items: readonly T[], seed = 42): T[] => {
  const out = [...items];
  let s = seed;
  for (let i = out.length - 1; i > 0; i--) {
    s = (s * 1103515245 + 12345) % 2147483648;
    const j = s % (i + 1);
    [out[i], out[j]] = [out[j] as T, out[i] as T];
  }
  return out;
};
