// Seed data written at start-up. Ids are explicit so the URLs printed by server.ts always point
// at the same records (the database assigns ids in its own order otherwise).
import type { MikroORM } from '@mikro-orm/core'
import { Author, Book, Genre } from './entities.ts'

export const AUTHORS = [
  { id: 1, name: 'Ursula K. Le Guin', born: 1929, country: 'US' },
  { id: 2, name: 'Isaac Asimov', born: 1920, country: 'US' },
  { id: 3, name: 'Stanisław Lem', born: 1921, country: 'PL' },
  { id: 4, name: 'Octavia E. Butler', born: 1947, country: 'US' },
  { id: 5, name: 'Terry Pratchett', born: 1948, country: 'GB' }
]

export const GENRES = [
  { id: 1, name: 'science fiction' },
  { id: 2, name: 'fantasy' },
  { id: 3, name: 'satire' },
  { id: 4, name: 'dystopia' }
]

/** Books, each with its author id and genre ids. */
export const BOOKS = [
  { id: 1, title: 'A Wizard of Earthsea', year: 1968, pages: 183, author: 1, genres: [2] },
  { id: 2, title: 'The Left Hand of Darkness', year: 1969, pages: 286, author: 1, genres: [1] },
  { id: 3, title: 'The Dispossessed', year: 1974, pages: 387, author: 1, genres: [1, 4] },
  { id: 4, title: 'Foundation', year: 1951, pages: 255, author: 2, genres: [1] },
  { id: 5, title: 'I, Robot', year: 1950, pages: 253, author: 2, genres: [1] },
  { id: 6, title: 'Solaris', year: 1961, pages: 204, author: 3, genres: [1] },
  { id: 7, title: 'The Cyberiad', year: 1965, pages: 295, author: 3, genres: [1, 3] },
  { id: 8, title: 'Kindred', year: 1979, pages: 264, author: 4, genres: [1] },
  { id: 9, title: 'Parable of the Sower', year: 1993, pages: 345, author: 4, genres: [1, 4] },
  { id: 10, title: 'Guards! Guards!', year: 1989, pages: 288, author: 5, genres: [2, 3] },
  { id: 11, title: 'Small Gods', year: 1992, pages: 284, author: 5, genres: [2, 3] }
]

/** Writes the seed data through MikroORM (on a forked entity manager). */
export async function seed (orm: MikroORM): Promise<void> {
  const em = orm.em.fork()
  for (const author of AUTHORS) em.create(Author, author)
  for (const genre of GENRES) em.create(Genre, genre)
  for (const book of BOOKS) em.create(Book, book)
  await em.flush()
}
