// The example's models, written with MikroORM's defineEntity (no decorators needed):
//
//   Author 1:m Book    (author.books, mapped by book.author)
//   Book   m:1 Author  (book.author)
//   Book   m:n Genre   (book.genres, owning side; genre.books is the inverse side)
import { defineEntity, p, type InferEntity } from '@mikro-orm/core'

export const Author = defineEntity({
  name: 'Author',
  properties: {
    id: p.integer().primary(),
    name: p.string(),
    born: p.integer().nullable(),
    country: p.string().nullable(),
    books: () => p.oneToMany(Book).mappedBy('author')
  }
})
export type IAuthor = InferEntity<typeof Author>

export const Book = defineEntity({
  name: 'Book',
  properties: {
    id: p.integer().primary(),
    title: p.string(),
    year: p.integer(),
    pages: p.integer().nullable(),
    author: () => p.manyToOne(Author),
    genres: () => p.manyToMany(Genre).owner().inversedBy('books')
  }
})
export type IBook = InferEntity<typeof Book>

export const Genre = defineEntity({
  name: 'Genre',
  properties: {
    id: p.integer().primary(),
    name: p.string().unique(),
    books: () => p.manyToMany(Book).mappedBy('genres')
  }
})
export type IGenre = InferEntity<typeof Genre>

export const entities = [Author, Book, Genre]
