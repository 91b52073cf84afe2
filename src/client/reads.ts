// The client's remembered reads: the GETs it re-issues after a reconnect to subscribe again, each
// with the resume token its last answer carried (the server then resumes it without running it).

/** Request headers as the client keeps them with a read. */
export type Headers = Readonly<Record<string, string>> | undefined

/** A remembered read: its headers, and the resume token of its last answer, if any. */
export interface Remembered {
  readonly headers: Headers
  readonly token: string | undefined
}

/** Subscribing reads, url → what they are sent with, least recently made first, at most `capacity` of them. */
export class RememberedReads {
  readonly #capacity: number
  readonly #reads = new Map<string, Remembered>()
  /** Followed finds: what tells the server the records the client holds (see {@link holding}). */
  readonly #held = new Map<string, () => string | undefined>()

  constructor (capacity: number) {
    this.#capacity = capacity
  }

  /** The urls, least recently made first. */
  urls (): string[] {
    return [...this.#reads.keys()]
  }

  /** The reads to re-issue, least recently made first. */
  entries (): IterableIterator<[string, Remembered]> {
    return this.#reads.entries()
  }

  /**
   * Records how a read of `url` was answered, and the resume token it carried: 404 forgets it (its
   * record is gone); an app's read answered 200 becomes the most recent one, evicting the oldest
   * beyond the capacity. A resync (answered 200, or 204 when it resumed) keeps its new token and
   * leaves the order alone (it is no use by the app); it does not bring back a url forgotten while
   * it was in flight.
   */
  answered (url: string, headers: Headers, statusCode: number, resync: boolean, token: string | undefined): void {
    if (statusCode === 404) {
      this.forget(url)
    } else if (resync) {
      if ((statusCode === 200 || statusCode === 204) && this.#reads.has(url)) this.#reads.set(url, { headers, token })
    } else if (statusCode === 200) {
      // Delete then set moves the url to the end.
      this.#reads.delete(url)
      this.#reads.set(url, { headers, token })
      if (this.#reads.size > this.#capacity) this.forget(this.#reads.keys().next().value as string)
    }
  }

  /**
   * A followed find's records, as its resume sends them (the `x-blueprints-held` header's value;
   * `undefined`: none to send, it is read again).
   */
  holding (url: string, held: () => string | undefined): void {
    this.#held.set(url, held)
  }

  /** What a followed find of `url` holds, for its resume (see {@link holding}). */
  held (url: string): string | undefined {
    return this.#held.get(url)?.()
  }

  /** Stops remembering `url`; whether it was remembered. */
  forget (url: string): boolean {
    this.#held.delete(url)
    return this.#reads.delete(url)
  }
}
