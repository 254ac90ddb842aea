// The next link of a page's Link field; not the package's API: its `exports` expose index.js only.
const TOKEN = "[!#$%&'*+.^_`|~0-9A-Za-z-]+";
const LINK = /[\s,]*<([^>]*)>/y;
// A value is a quoted-string or a token; an unquoted value is read up to the next `;` or `,` (`type=text/html` too).
const PARAM = new RegExp(`\\s*;\\s*(${TOKEN})\\s*(?:=\\s*(?:"((?:[^"\\\\]|\\\\.)*)"|([^\\s;,]+)))?`, 'y');
const END = /\s*(?:,|$)/y;

/**
 * The target of the first link whose relation types include `next` in a Link field (RFC 8288 §3: comma-separated
 * `<target>; param=value` values, `rel` a space-separated list, quoted or not, case-insensitive); undefined when there
 * is none or the field does not parse.
 */
export const nextLink = (field: string | null): string | undefined => {
  if (field === null) return undefined;
  let at = 0;
  while (at < field.length) {
    LINK.lastIndex = at;
    const link = LINK.exec(field);
    if (link === null) return undefined;
    at = LINK.lastIndex;
    let rel: string | undefined;
    for (;;) {
      PARAM.lastIndex = at;
      const param = PARAM.exec(field);
      if (param === null) break;
      at = PARAM.lastIndex;
      // Only the first rel parameter counts (§3.3).
      if (rel === undefined && param[1]?.toLowerCase() === 'rel')
        rel = param[2]?.replace(/\\(.)/g, '$1') ?? param[3] ?? '';
    }
    END.lastIndex = at;
    if (END.exec(field) === null) return undefined;
    at = END.lastIndex;
    if (rel !== undefined && rel.toLowerCase().split(/\s+/).includes('next')) return link[1];
    if (at >= field.length) break;
  }
  return undefined;
};
