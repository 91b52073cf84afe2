/**
 * "Did you mean …?": the closest of the known names to a misspelt one, for error messages.
 *
 * @module
 */

/**
 * "Did you mean …?" for a name that is close to one of the known names (edit distance ≤ 2).
 *
 * @returns the suffix to append to a message, or `''` when nothing is close.
 * @example
 * ```ts
 * didYouMean('nmae', ['name', 'age']) // ' (did you mean `name`?)'
 * ```
 */
export function didYouMean (name: string, known: Iterable<string>): string {
  let best: string | undefined
  let bestDistance = 3
  for (const candidate of known) {
    const d = distance(name.toLowerCase(), candidate.toLowerCase())
    if (d < bestDistance) {
      best = candidate
      bestDistance = d
    }
  }
  return best === undefined ? '' : ` (did you mean \`${best}\`?)`
}

function distance (a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, i) => i)
  for (let i = 1; i <= a.length; i++) {
    const current = [i]
    for (let j = 1; j <= b.length; j++) {
      current[j] = Math.min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1))
    }
    previous = current
  }
  return previous[b.length]
}
