import * as E from 'fp-ts/lib/Either.js';
import * as t from 'io-ts';
import { PLANT_FIELDS, PLANT_FIELD_NAMES, PlantId, PlantText, plant } from '../../../domain/plant.js';
import type { Plant, PlantFields } from '../../../domain/plant.js';

/**
 * The plant in a stored document (written from the plant by spread, each field a member of its name), decoded again
 * when read: a document that breaks a domain rule is a fault, not a plant.
 */
const StoredPlant = t.intersection([
  t.type({
    id: t.union([t.bigint, t.number]),
    ...Object.fromEntries(PLANT_FIELD_NAMES.filter((k) => PLANT_FIELDS[k].required).map((k) => [k, t.string])),
  }),
  t.partial(
    Object.fromEntries(
      PLANT_FIELD_NAMES.filter((k) => !PLANT_FIELDS[k].required).map((k) => [k, t.union([t.string, t.undefined])]),
    ),
  ),
]);

export const decodeStored = (doc: unknown): Plant => {
  const raw = StoredPlant.decode(doc);
  if (E.isLeft(raw)) throw new Error('a stored plant document has an unexpected shape');
  const stored = raw.right as { readonly id: bigint | number } & Readonly<Record<string, string | undefined>>;
  const id = PlantId.fromBigInt('id', typeof stored.id === 'bigint' ? stored.id : BigInt(stored.id));
  if (E.isLeft(id)) throw new Error('a stored plant breaks a domain rule');
  const fields: Record<string, unknown> = { id: id.right };
  for (const k of PLANT_FIELD_NAMES) {
    const value = stored[k];
    if (value === undefined) continue;
    const checked = PlantText[k](k, value);
    if (E.isLeft(checked)) throw new Error('a stored plant breaks a domain rule');
    fields[k] = checked.right;
  }
  return plant(fields as PlantFields);
};
