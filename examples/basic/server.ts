// Starts the books example: `npm run example:basic` (PORT, HOST and DB_FILE are read from the
// environment).
import { closeOnSignals } from '../close-on-signals.ts'
import { buildApp } from './app.ts'

const port = Number(process.env.PORT ?? 3000)
const host = process.env.HOST ?? '127.0.0.1'

const { app } = await buildApp({ dbName: process.env.DB_FILE })

closeOnSignals(app)

await app.listen({ port, host })

const base = `http://${host.includes(':') ? `[${host}]` : host}:${port}`
const examples = [
  ['every author (with books populated)', `curl '${base}/author'`],
  ['one book, with its author and genres', `curl '${base}/book/3'`],
  ['one book without associations', `curl '${base}/book/3?populate=false'`],
  [
    'find with where / sort / limit',
    `curl -G '${base}/book' --data-urlencode 'where={"year":{">=":1960},"pages":{"<":300}}' --data-urlencode 'sort=year DESC' -d limit=3 -d populate=false`
  ],
  [
    'or + startsWith, selected fields',
    `curl -G '${base}/author' --data-urlencode 'where={"or":[{"name":{"startsWith":"I"}},{"country":"PL"}]}' -d select=name,born -d populate=false`
  ],
  ["populate a 1:m (an author's books)", `curl -G '${base}/author/1/books' --data-urlencode 'sort=year ASC'`],
  ["populate an m:1 (a book's author)", `curl '${base}/book/6/author'`],
  ["populate an m:n (a genre's books)", `curl -G '${base}/genre/3/books' -d select=title,year`],
  ['create a genre', `curl -X POST '${base}/genre' -H 'content-type: application/json' -d '{"name":"Essays"}'`],
  ['add a genre to a book (m:n)', `curl -X PUT '${base}/book/3/genres/1'`],
  [
    'replace the genres of a book',
    `curl -X PUT '${base}/book/3/genres' -H 'content-type: application/json' -d '{"fks":[2,3]}'`
  ],
  ['update a book', `curl -X PATCH '${base}/book/3' -H 'content-type: application/json' -d '{"pages":321}'`]
]
console.log(
  `\nfastify-blueprints example on ${base}. Try:\n\n${
    examples.map(([what, cmd]) => `  # ${what}\n  ${cmd}\n`).join('\n')
  }`
)
console.log(
  `Realtime: in another terminal, \`npm run example:watch\` reads the books over ws://${
    host.includes(':') ? `[${host}]` : host
  }:${port}/socket and prints every change the commands above make.`
)
