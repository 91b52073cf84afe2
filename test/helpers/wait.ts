// Waits with a deadline, written once: a missing event fails the test, naming what it waited
// for, instead of hanging it until tap's timeout.

/** What a helper that registers cleanup needs of a tap test. */
export interface Teardown {
  teardown(fn: () => unknown): void
}

/**
 * `promise`, or a rejection "timed out waiting for `what`" after `ms`. The timer is cleared when
 * the promise settles and never keeps the process alive.
 */
export async function deadline<T> (promise: Promise<T>, ms: number, what: string | (() => string)): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  const late = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => {
      reject(new Error(`timed out waiting for ${typeof what === 'string' ? what : what()}`))
    }, ms).unref()
  })
  try {
    return await Promise.race([promise, late])
  } finally {
    clearTimeout(timer)
  }
}

/**
 * Polls `check` every `every` ms until it returns something other than undefined or false, and
 * returns that; fails after `ms`. The polling interval only paces the checks: the result is what
 * `check` saw, never the time that passed.
 */
export async function eventually<T> (
  what: string | (() => string),
  check: () => T | undefined | false | Promise<T | undefined | false>,
  ms = 5000,
  every = 10
): Promise<T> {
  const end = Date.now() + ms
  for (;;) {
    const value = await check()
    if (value !== undefined && value !== false) return value
    if (Date.now() > end) {
      throw new Error(`timed out after ${ms} ms waiting for ${typeof what === 'string' ? what : what()}`)
    }
    await new Promise(resolve => setTimeout(resolve, every))
  }
}
