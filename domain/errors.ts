/** Business errors of the plant domain: tagged plain objects, matched exhaustively where they are turned into responses. */

/** An input broke a rule of the domain; `field` and `rule` make the client's message ("name: must be ..."). */
export interface FieldRuleBroken {
  readonly _tag: 'FieldRuleBroken';
  readonly field: string;
  readonly rule: string;
}

/** The owner already has a plant with this id, with another value in one of its fields. */
export interface PlantConflict {
  readonly _tag: 'PlantConflict';
}

/** The owner has no plant with this id (never had, deleted, or it is another owner's). */
export interface PlantNotFound {
  readonly _tag: 'PlantNotFound';
}

/** The owner keeps as many plants as its quota allows: nothing was stored. Its own figures, never another's. */
export interface QuotaExceeded {
  readonly _tag: 'QuotaExceeded';
  readonly limit: number;
  readonly used: number;
}

export const plantConflict: PlantConflict = { _tag: 'PlantConflict' };
export const plantNotFound: PlantNotFound = { _tag: 'PlantNotFound' };
export const quotaExceeded = (limit: number, used: number): QuotaExceeded => ({ _tag: 'QuotaExceeded', limit, used });
