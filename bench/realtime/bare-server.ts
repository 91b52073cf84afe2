// The transport's limit for the live part of the realtime benchmark: a bare `ws` server, no
// Fastify, no plugin. bench/realtime/run.ts starts it as a child with an IPC channel:
//
//   node bench/realtime/bare-server.ts      (not useful by hand)
//
// It accepts websockets on any path, and answers `POST /broadcast` (the body: one frame's text)
// by sending that text to every connected socket, then 200 — what the plugin does for a write
// whose notification goes to every socket, minus everything else. It sends {"type":"ready",
// "ports":[port]} and exits on SIGTERM or when the orchestrator goes away.
import { createServer } from 'node:http'
import { WebSocketServer } from 'ws'

if (process.send === undefined) {
  throw new Error('bare-server.ts runs as a child of bench/realtime/run.ts (it needs an IPC channel)')
}

const server = createServer((request, response) => {
  const chunks: Buffer[] = []
  request.on('data', (chunk: Buffer) => chunks.push(chunk))
  request.on('end', () => {
    const text = Buffer.concat(chunks).toString()
    for (const client of sockets.clients) client.send(text)
    response.writeHead(200, { 'content-type': 'application/json' }).end('{}')
  })
})
const sockets = new WebSocketServer({ server, perMessageDeflate: false })
server.listen(0, '127.0.0.1', () => {
  process.send?.({ type: 'ready', ports: [(server.address() as { port: number }).port] })
})
const stop = (): void => {
  for (const client of sockets.clients) client.terminate()
  server.close()
  process.exit(0)
}
process.once('SIGTERM', stop)
process.once('disconnect', stop)
