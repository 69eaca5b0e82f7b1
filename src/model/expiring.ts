/**
 * A map whose entries expire by the model's clock: an expired entry reads as absent, and each
 * new entry drops up to two expired ones on the way (a walk that goes round and round), so the
 * memory it holds stays bounded by the entries alive, without timers.
 */
interface Entry<V> {
  value: V;
  expiresAt: number;
}

/** Entries that expire by the model's clock (see the file's opening comment). */
export class ExpiringMap<V> {
  private readonly entries = new Map<string, Entry<V>>();
  private walk: MapIterator<[string, Entry<V>]> | undefined;

  /** The entry's value, or undefined when there is none or it expired by `now`. */
  get(key: string, now: number): V | undefined {
    const entry = this.entries.get(key);
    if (entry === undefined) return undefined;
    if (now < entry.expiresAt) return entry.value;
    this.entries.delete(key);
    return undefined;
  }

  /** Keeps `value` until `expiresAt`. */
  set(key: string, value: V, expiresAt: number, now: number): void {
    const fresh = !this.entries.has(key);
    this.entries.set(key, { value, expiresAt });
    if (fresh) this.dropExpired(now, 2);
  }

  /** Forgets the entry. */
  delete(key: string): void {
    this.entries.delete(key);
  }

  /** Deletes every entry whose key starts with `prefix`. */
  deleteStartingWith(prefix: string): void {
    for (const key of this.entries.keys()) if (key.startsWith(prefix)) this.entries.delete(key);
  }

  /** Entries held (expired ones not dropped yet included). */
  get size(): number {
    return this.entries.size;
  }

  private dropExpired(now: number, steps: number): void {
    for (let i = 0; i < steps; i++) {
      this.walk ??= this.entries.entries();
      const next = this.walk.next();
      if (next.done) {
        this.walk = undefined;
        return;
      }
      if (now >= next.value[1].expiresAt) this.entries.delete(next.value[0]);
    }
  }
}
