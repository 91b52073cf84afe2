// The client's remembered reads: the GETs it re-issues after a reconnect to subscribe again.

/** Request headers as the client keeps them with a read. */
export type Headers = Readonly<Record<string, string>> | undefined

/** Subscribing reads, url → headers, least recently made first, at most `capacity` of them. */
export class RememberedReads {
  readonly #capacity: number
  readonly #reads = new Map<string, Headers>()

  constructor (capacity: number) {
    this.#capacity = capacity
  }

  /** The urls, least recently made first. */
  urls (): string[] {
    return [...this.#reads.keys()]
  }

  /** The reads to re-issue, least recently made first. */
  entries (): IterableIterator<[string, Headers]> {
    return this.#reads.entries()
  }

  /**
   * Records how a read of `url` was answered: 404 forgets it (its record is gone); an app's read
   * answered 200 becomes the most recent one, evicting the oldest beyond the capacity. A resync
   * leaves the order alone (it is no use by the app), and does not bring back a url forgotten
   * while it was in flight.
   */
  answered (url: string, headers: Headers, statusCode: number, resync: boolean): void {
    if (statusCode === 404) {
      this.#reads.delete(url)
    } else if (statusCode === 200 && !resync) {
      // Delete then set moves the url to the end.
      this.#reads.delete(url)
      this.#reads.set(url, headers)
      if (this.#reads.size > this.#capacity) this.#reads.delete(this.#reads.keys().next().value as string)
    }
  }

  /** Stops remembering `url`; whether it was remembered. */
  forget (url: string): boolean {
    return this.#reads.delete(url)
  }
}
