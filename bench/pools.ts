// The rows the write scenarios work on, shared by the seed (bench/seed.ts) and the load generator
// (bench/run.ts). Nothing here imports the ORM, so the load generator stays light.
//
// Users 1-400 are the read scenarios' data and are never written. After them come TWIN_PAIRS
// pairs of twins: a plugin user (401-500) and a baseline user (501-600) with the same name, age,
// flags, date, pets, best pet and tags, so that both contenders write to rows of their own (they
// never wait for each other's locks) and answer the same amount of JSON. Twins are at most 30
// years old, so that they stay out of read scenario b (age > 30).

export type Contender = 'plugin' | 'baseline'
export type WriteKind = 'toggle' | 'replace'

export const READ_USERS = 400
export const TWIN_PAIRS = 100
/** Tags 1-12 are linked to users by the seed; 13-24 only by the write scenarios. */
export const SEEDED_TAGS = 12
export const TAG_COUNT = 24

const range = (from: number, to: number): number[] => Array.from({ length: to - from + 1 }, (_, i) => from + i)

/** The tags scenario c links and unlinks. The seed links none of them, so every add adds. */
export const TOGGLE_TAGS = range(SEEDED_TAGS + 1, TAG_COUNT)
/** The two disjoint sets of 10 tags scenario d alternates between. */
export const SET_A = range(1, 10)
export const SET_B = range(11, 20)

/** The id of twin `k` (0 … TWIN_PAIRS - 1) of a contender. */
export const twinId = (who: Contender, k: number): number => READ_USERS + 1 + k + (who === 'plugin' ? 0 : TWIN_PAIRS)

/** The users a contender writes in a scenario: the first half of its twins toggle, the second half replace. */
export function writeUsers (who: Contender, kind: WriteKind): number[] {
  const half = TWIN_PAIRS / 2
  return range(0, half - 1).map(k => twinId(who, kind === 'toggle' ? k : half + k))
}
