import * as E from 'fp-ts/lib/Either.js';
import { PLANT_FIELDS, PLANT_FIELD_NAMES, PlantId, PlantText, plant } from '../../../domain/plant.js';
import type { Plant, PlantFields } from '../../../domain/plant.js';

/**
 * The plant in a stored document (written from the plant by spread, each field a member of its name), decoded again
 * when read: a document that breaks a domain rule, or has an unexpected shape, is a fault, not a plant.
 */
export const decodeStored = (doc: Readonly<Record<string, unknown>>): Plant => {
  const broken = () => new Error('a stored plant document breaks a domain rule or has an unexpected shape');
  const raw = doc['id'];
  if (typeof raw !== 'bigint' && !Number.isSafeInteger(raw)) throw broken();
  const id = PlantId.fromBigInt('id', BigInt(raw as bigint | number));
  if (E.isLeft(id)) throw broken();
  const fields: Record<string, unknown> = { id: id.right };
  for (const k of PLANT_FIELD_NAMES) {
    const value = doc[k];
    if (value === undefined && !PLANT_FIELDS[k].required) continue;
    const checked = typeof value === 'string' ? PlantText[k](k, value) : undefined;
    if (checked === undefined || E.isLeft(checked)) throw broken();
    fields[k] = checked.right;
  }
  return plant(fields as PlantFields);
};
