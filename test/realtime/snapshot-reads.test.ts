// A socket's read runs in one snapshot (it reads which change sets of the log its answer reflects
// beside it), and COMMIT leaves with its statements when they all go out at once. A read that
// populates deeper than the records' own associations reads level by level where the database
// builds no tree (SQLite): its COMMIT must wait. Found by the fuzz (a find-one with
// `populate=pets.owner` over a socket answered 500 "a statement was issued after its snapshot
// ended"); every shape of deep populate, on every database, answers over a socket what HTTP answers.
import t from 'tap'
import { DATABASES } from '../helpers/app.ts'
import { listening, open } from '../helpers/realtime.ts'

const URLS = [
  '/user/10?populate=pets.owner',
  '/user?populate=pets.owner&sort=id&limit=5',
  '/pet?populate=owner.bestPet&sort=id&limit=5',
  '/pet/1?populate=owner.pets',
  '/user?populate=pets,pets.tags&pets.limit=2&sort=id&limit=3',
  '/user/1?populate=bestPet.owner'
]

for (const db of DATABASES) {
  t.test(`${db}: a socket's deeply populated reads answer what HTTP answers`, async t => {
    const app = await listening(t, db)
    const socket = await open(t, app)
    for (const url of URLS) {
      const http = await app.inject(url)
      const frame = await socket.request('GET', url)
      t.equal(frame.statusCode, http.statusCode, `${url}: ${http.statusCode === 200 ? 'found' : http.body}`)
      t.same(frame.body, http.json(), `${url}: the same records`)
    }
  })
}
