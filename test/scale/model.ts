/**
 * An exact model of what a mixed load was told, for one owner: per id, the set of states the store may be in
 * (a plant's name, or ABSENT). An answer settles it (200, 204, 404, 409); a 503 leaves it open, because a request
 * in flight when the store died may or may not have landed. Every create sends a name never sent before, so a name
 * identifies one create: once an answer proves a name gone (the id deleted, found absent, or holding another plant),
 * it must never be listed again.
 *
 * The load keeps one request at a time per id (`begin`/`end`), so answers on one id arrive in the order they happened.
 */
export const ABSENT = null;
type State = string | typeof ABSENT;

export interface ListCheck {
  readonly started: number;
  /** Ids whose plant was settled, with no request on them, when the list started: name and request count. */
  readonly settled: ReadonlyMap<number, { readonly name: string; readonly requests: number }>;
}

export class AcknowledgedModel {
  private readonly possible = new Map<number, Set<State>>();
  private readonly busy = new Set<number>();
  private readonly requests = new Map<number, number>();
  /** When an answer proved a name gone (ms, performance.now()). */
  private readonly goneAt = new Map<string, number>();
  private readonly violations: string[] = [];
  private nameCount = 0;

  private states(id: number): Set<State> {
    let s = this.possible.get(id);
    if (s === undefined) this.possible.set(id, (s = new Set([ABSENT])));
    return s;
  }

  private settle(id: number, next: Set<State>, at: number): void {
    for (const was of this.states(id)) if (was !== ABSENT && !next.has(was)) this.goneAt.set(was, at);
    this.possible.set(id, next);
  }

  private violation(message: string): void {
    if (this.violations.length < 20) this.violations.push(message);
    else if (this.violations.length === 20) this.violations.push('...');
  }

  /** A name never sent before, that names its id: `p<id>.<n>`. */
  freshName(id: number): string {
    return `p${id}.${++this.nameCount}`;
  }

  isBusy(id: number): boolean {
    return this.busy.has(id);
  }

  begin(id: number): void {
    this.busy.add(id);
    this.requests.set(id, (this.requests.get(id) ?? 0) + 1);
  }

  end(id: number): void {
    this.busy.delete(id);
  }

  /** A create of `name` on `id` was answered `status` (anything but 200 and 409 leaves it open). */
  created(id: number, name: string, status: number, at: number): void {
    const was = this.states(id);
    if (status === 200) {
      // A fresh name can only be stored by this create, which needs the id free.
      if (!was.has(ABSENT)) this.violation(`create ${name} was 200 but id ${id} held ${show(was)}: lost`);
      this.settle(id, new Set([name]), at);
    } else if (status === 409) {
      const held = new Set([...was].filter((s) => s !== ABSENT && s !== name));
      if (held.size === 0) this.violation(`create ${name} was 409 but id ${id} held nothing else`);
      this.settle(id, held, at);
    } else if (was.has(ABSENT)) {
      was.add(name);
    }
  }

  /** A delete of `id` was answered `status` (anything but 204 and 404 leaves it open). */
  deleted(id: number, status: number, at: number): void {
    const was = this.states(id);
    if (status === 204) {
      if (![...was].some((s) => s !== ABSENT)) this.violation(`delete ${id} was 204 but nothing was stored`);
      this.settle(id, new Set([ABSENT]), at);
    } else if (status === 404) {
      if (!was.has(ABSENT)) this.violation(`delete ${id} was 404 but id ${id} held ${show(was)}: lost`);
      this.settle(id, new Set([ABSENT]), at);
    } else {
      was.add(ABSENT);
    }
  }

  /** What a list starting now must show at least: every settled plant nobody touches until it ends. */
  listStarts(at: number): ListCheck {
    const settled = new Map<number, { name: string; requests: number }>();
    for (const [id, states] of this.possible) {
      const [only] = states;
      if (states.size === 1 && only !== ABSENT && only !== undefined && !this.busy.has(id))
        settled.set(id, { name: only, requests: this.requests.get(id) ?? 0 });
    }
    return { started: at, settled };
  }

  /**
   * Checks one complete listing (every page) that started at `check.started`: ids strictly ascending (so none twice),
   * no name proved gone before the list started, and every settled plant untouched meanwhile present.
   */
  listed(names: readonly string[], check: ListCheck): void {
    let last = -Infinity;
    const seen = new Set<string>();
    for (const name of names) {
      const id = idOf(name);
      if (id === undefined) {
        this.violation(`listed a plant this load never created: ${JSON.stringify(name)}`);
        continue;
      }
      if (id <= last) this.violation(`listed id ${id} after id ${last}: out of order or twice`);
      last = id;
      seen.add(name);
      const gone = this.goneAt.get(name);
      if (gone !== undefined && gone < check.started) this.violation(`listed ${name}, gone before the list started`);
    }
    for (const [id, { name, requests }] of check.settled) {
      const untouched = (this.requests.get(id) ?? 0) === requests && !this.busy.has(id);
      if (untouched && !seen.has(name)) this.violation(`acknowledged ${name} missing from a list: lost`);
    }
  }

  /**
   * Compares a listing taken with no load running against the model: every listed plant possible, every settled
   * plant present and every settled absence absent. Answers the number of settled plants missing (lost).
   */
  final(names: readonly string[]): { lost: number; settled: number; open: number } {
    const listed = new Map<number, string>();
    for (const name of names) {
      const id = idOf(name);
      if (id === undefined || listed.has(id)) this.violation(`final list: unexpected or repeated ${name}`);
      else listed.set(id, name);
    }
    let lost = 0;
    let settled = 0;
    let open = 0;
    for (const [id, states] of this.possible) {
      const shown = listed.get(id) ?? ABSENT;
      if (states.size === 1) settled++;
      else open++;
      if (!states.has(shown)) {
        if (shown === ABSENT) lost++;
        this.violation(`final list: id ${id} shows ${shown ?? 'nothing'}, model allows ${show(states)}`);
      }
    }
    for (const id of listed.keys())
      if (!this.possible.has(id)) this.violation(`final list: id ${id} was never created`);
    return { lost, settled, open };
  }

  problems(): readonly string[] {
    return this.violations;
  }
}

const idOf = (name: string): number | undefined => {
  const m = /^p(\d+)\.\d+$/.exec(name);
  return m === null ? undefined : Number(m[1]);
};

const show = (states: ReadonlySet<State>): string => [...states].map((s) => s ?? 'absent').join('|');
