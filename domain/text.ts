// Control characters are C0 (U+0000..U+001F) and DEL (U+007F). C1 controls and format characters are allowed,
// as the contract names only these.
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f]/;

/** Whether the text holds a control character (the rule of names, tags, owners and subjects alike). */
export const hasControlCharacter = (s: string): boolean => CONTROL.test(s);
