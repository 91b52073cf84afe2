// Starts the demo: `npm run example` serves the board on http://127.0.0.1:3000 (PORT, HOST).
// DATABASE_URL switches to PostgreSQL, REDIS_URL to the Redis broker: two processes on other
// ports with the same REDIS_URL then push each other's changes to their pages.
import { closeOnSignals } from '../close-on-signals.ts'
import { buildBoard } from './app.ts'

const port = Number(process.env.PORT ?? 3000)
const host = process.env.HOST ?? '127.0.0.1'
const origins = [`http://${host}:${port}`, `http://localhost:${port}`, `http://127.0.0.1:${port}`]

const app = await buildBoard({
  logger: true,
  databaseUrl: process.env.DATABASE_URL,
  redisUrl: process.env.REDIS_URL,
  origins
})

closeOnSignals(app)

await app.listen({ port, host })
console.log(`\nThe team board: open http://${host}:${port}/ in two tabs (the OpenAPI page is /docs).`)
