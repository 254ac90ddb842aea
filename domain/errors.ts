/** Business errors of the plant domain: tagged plain objects, matched exhaustively where they are turned into responses. */

/** An input broke a rule of the domain; `field` and `rule` make the client's message ("name: must be ..."). */
export interface FieldRuleBroken {
  readonly _tag: 'FieldRuleBroken';
  readonly field: string;
  readonly rule: string;
}

/** The owner already has a plant with this id, with another name or tag. */
export interface PlantConflict {
  readonly _tag: 'PlantConflict';
}

/** The owner has no plant with this id (never had, deleted, or it is another owner's). */
export interface PlantNotFound {
  readonly _tag: 'PlantNotFound';
}

export const plantConflict: PlantConflict = { _tag: 'PlantConflict' };
export const plantNotFound: PlantNotFound = { _tag: 'PlantNotFound' };
