import type { Plant } from '../../../domain/plant.js';

/** The Plant shape of the contract: `name`, and `tag` when present; never the id. */
const contractShape = (p: Plant): { name: string; tag?: string } =>
  p.tag === undefined ? { name: p.name } : { name: p.name, tag: p.tag };

export const plantJson = (p: Plant): string => JSON.stringify(contractShape(p));

export const plantsJson = (plants: readonly Plant[]): string => JSON.stringify(plants.map(contractShape));
