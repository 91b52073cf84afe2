/**
 * The syntax of Waterline's `like` modifier, read into the tokens the dialects match with.
 *
 * @module
 */
import type { PatternToken } from '../sql/dialect.ts'

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
