// A socket.io client written packet by packet (Engine.IO 3 over a `ws` websocket, as sails.io.js'
// socket.io-client 2 speaks it), for tests that send what no socket.io client would: a binary
// event whose attachments come late or never, binary data out of place. Every wait has a deadline.
import WebSocket from 'ws'
import type { FastifyInstance } from 'fastify'
import { deadline, type Teardown } from './wait.ts'

export interface RawIo {
  readonly ws: WebSocket
  /** Sends a socket.io packet (its text: `2["get",…]`) as an Engine.IO message. */
  packet(text: string): void
  /** Sends binary data (an attachment) as an Engine.IO message. */
  binary(data: Buffer): void
  /** Resolves with the arguments of the acknowledgement with this id (fails after 5 s). */
  ack(id: number): Promise<unknown[]>
  /**
   * Pings the server and resolves on its pong: Engine.IO handles a connection's messages in order,
   * so everything sent before the ping has been handled then.
   */
  handled(): Promise<void>
  /** Resolves when the server closed the connection (fails after 5 s). */
  closed(): Promise<void>
}

/** Connects to the socket.io endpoint of a listening app, as an SDK 1.2.1 client; closed at teardown. */
export async function rawIo (t: Teardown, app: FastifyInstance, path = '/socket.io'): Promise<RawIo> {
  const { port } = app.server.address() as { port: number }
  const ws = new WebSocket(`ws://127.0.0.1:${port}${path}/?EIO=3&transport=websocket&__sails_io_sdk_version=1.2.1`)
  t.teardown(() => {
    ws.terminate()
  })
  const acks = new Map<number, (args: unknown[]) => void>()
  const pongs: Array<() => void> = []
  let connected: () => void = () => {}
  const ready = new Promise<void>(resolve => {
    connected = resolve
  })
  const gone = new Promise<void>(resolve => {
    ws.once('close', () => {
      resolve()
    })
  })
  ws.on('message', (data, isBinary) => {
    const text = String(data)
    if (isBinary) return
    if (text === '3') pongs.shift()?.()
    else if (text === '40') connected()
    else if (text.startsWith('43')) {
      // An acknowledgement: `43<id>[args]`.
      const at = text.indexOf('[')
      acks.get(Number(text.slice(2, at)))?.(JSON.parse(text.slice(at)))
    }
  })
  await deadline(ready, 5000, 'the socket.io connection')
  return {
    ws,
    packet (text) {
      ws.send(`4${text}`)
    },
    binary (data) {
      ws.send(Buffer.concat([Buffer.from([4]), data]), { binary: true })
    },
    async ack (id) {
      return await deadline(
        new Promise<unknown[]>(resolve => {
          acks.set(id, resolve)
        }),
        5000,
        `the acknowledgement ${id}`
      )
    },
    async handled () {
      const pong = new Promise<void>(resolve => {
        pongs.push(resolve)
      })
      ws.send('2')
      await deadline(pong, 5000, 'the pong')
    },
    async closed () {
      await deadline(gone, 5000, 'the server to close the connection')
    }
  }
}
