// Shared by the examples' servers: SIGINT or SIGTERM closes the app (and with it its ORM), once.
import type { FastifyInstance } from 'fastify'

/** Closes `app` on the first SIGINT or SIGTERM, then exits (1 when closing failed). */
export function closeOnSignals (app: FastifyInstance): void {
  let closing = false
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      if (closing) return
      closing = true
      app.log.info(`${signal} received, closing`)
      app.close().then(() => process.exit(0), err => {
        app.log.error(err)
        process.exit(1)
      })
    })
  }
}
