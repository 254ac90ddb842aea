import type { Plant } from '../../domain/plant.js';

/** The Plant shape of the contract: `name`, and `tag` when present; never the id. */
export const plantJson = (p: Plant): string =>
  p.tag === undefined
    ? `{"name":${JSON.stringify(p.name)}}`
    : `{"name":${JSON.stringify(p.name)},"tag":${JSON.stringify(p.tag)}}`;

export const plantsJson = (plants: readonly Plant[]): string => {
  let out = '[';
  for (let i = 0; i < plants.length; i++) {
    if (i > 0) out += ',';
    out += plantJson(plants[i] as Plant);
  }
  return out + ']';
};
