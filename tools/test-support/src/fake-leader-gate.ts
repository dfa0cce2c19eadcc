/**
 * A leader gate a test drives by hand, shaped as the loop's `LeaderGate` (structural: this package
 * imports no loop). `grant()` starts a term; `revoke()` ends it as an elector does (the flag, then
 * the term signal, then `onLost`); `freeze()` only turns `isLeader()` false — a frozen-then-resumed
 * ex-leader before any of its callbacks ran. A `grant()` while a frozen term is still open ends that
 * term first: an elector that leads again has lost the lease in between.
 */
export class FakeLeaderGate {
  leader = false;
  #term: AbortController | undefined;
  readonly #waiters = new Set<(signal: AbortSignal) => void>();
  readonly #lost = new Set<(reason: unknown) => void>();
  /** Work handed to {@link FakeLeaderGate.track}, in order. */
  readonly tracked: Promise<unknown>[] = [];

  isLeader(): boolean {
    return this.leader;
  }
  waitForLeadership(signal?: AbortSignal): Promise<AbortSignal> {
    if (this.leader && this.#term) return Promise.resolve(this.#term.signal);
    return new Promise((resolve, reject) => {
      const waiter = (s: AbortSignal): void => resolve(s);
      this.#waiters.add(waiter);
      const abort = (): void => {
        this.#waiters.delete(waiter);
        reject(signal?.reason);
      };
      signal?.addEventListener('abort', abort, { once: true });
    });
  }
  onLost(listener: (reason: unknown) => void): () => void {
    this.#lost.add(listener);
    return () => this.#lost.delete(listener);
  }
  track(work: Promise<unknown>): void {
    this.tracked.push(work);
  }
  /** How many `onLost` listeners are registered. */
  get listeners(): number {
    return this.#lost.size;
  }
  grant(): void {
    if (this.leader) return;
    if (this.#term !== undefined) this.revoke();
    this.leader = true;
    this.#term = new AbortController();
    for (const waiter of [...this.#waiters]) waiter(this.#term.signal);
    this.#waiters.clear();
  }
  freeze(): void {
    this.leader = false;
  }
  revoke(): void {
    if (!this.leader && this.#term === undefined) return;
    this.leader = false;
    const term = this.#term;
    this.#term = undefined;
    term?.abort(new Error('lost'));
    for (const listener of [...this.#lost]) listener(new Error('lost'));
  }
}
