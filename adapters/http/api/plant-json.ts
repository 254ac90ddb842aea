import type { Plant } from '../../../domain/plant.js';

/** The Plant shape of the contract: every field but the id (an optional field only when present: domain plants omit it). */
const contractShape = ({ id: _id, ...shape }: Plant): Omit<Plant, 'id'> => shape;

export const plantJson = (p: Plant): string => JSON.stringify(contractShape(p));

export const plantsJson = (plants: readonly Plant[]): string => JSON.stringify(plants.map(contractShape));
