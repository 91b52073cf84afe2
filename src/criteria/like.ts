/**
 * Match patterns: the tokens the dialects match with, the syntax of Waterline's `like` modifier
 * read into them, and the ASCII case folding both databases share.
 *
 * @module
 */

/** One element of a match pattern: a literal run of characters or a wildcard. */
export type PatternToken = string | { readonly wildcard: 'any' | 'one' }

/** ASCII-only lower-casing: what SQLite's lower() does, so both sides fold the same letters. */
export function foldAscii (value: string): string {
  return value.replace(/[A-Z]/g, c => c.toLowerCase())
}

/**
 * A `like` pattern: `%` any run of characters, `_` one character, `\` makes the next character
 * literal (a trailing `\` is a literal backslash).
 */
export function likeTokens (pattern: string): PatternToken[] {
  const tokens: PatternToken[] = []
  let literal = ''
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i]
    if (c === '\\' && i + 1 < pattern.length) {
      literal += pattern[++i]
    } else if (c === '%' || c === '_') {
      if (literal !== '') tokens.push(literal)
      literal = ''
      tokens.push({ wildcard: c === '%' ? 'any' : 'one' })
    } else {
      literal += c
    }
  }
  if (literal !== '') tokens.push(literal)
  return tokens
}
