// tcpProxy(target): a real TCP proxy on 127.0.0.1 in front of PostgreSQL, for outage tests. The
// app's ORM connects to the proxy's port; every connection is forwarded to the target. The test
// can then play the network and the server:
//
// - kill(): every open connection breaks at once, on both sides (the client sees its socket end —
//   pg: "Connection terminated unexpectedly", no code — or, with `{ reset: true }`, an RST —
//   ECONNRESET; PostgreSQL sees the client go and ends the backend);
// - refuse('closed'): "PostgreSQL is stopped": the listening socket is closed, so connecting
//   fails with ECONNREFUSED;
// - refuse('reset'): a connection is accepted and reset at once (RST: pg reports ECONNRESET), as
//   when a server dies during the handshake;
// - refuse('starting'): the startup message is answered with PostgreSQL's own FATAL
//   ErrorResponse 57P03 "the database system is starting up", then the connection is closed;
// - resume(): "PostgreSQL is started again": new connections are forwarded again, on the same port.
//
// refuse() kills the open connections first, as a server that stops does.
import net from 'node:net'

export type Refusal = 'closed' | 'reset' | 'starting'

export interface TcpProxy {
  /** The port the proxy listens on (the same across refuse/resume). */
  readonly port: number
  /** Connections forwarded now. */
  readonly open: number
  /** Connections accepted and forwarded since the start. */
  readonly forwarded: number
  /** Local ports of the proxy's current connections to the target (PostgreSQL's `client_port`). */
  upstreamPorts(): number[]
  /** Breaks every open connection on both sides; returns how many there were. */
  kill(options?: { reset?: boolean }): number
  /** Forwards the connections made from now on to `next` (a client moved to another server). */
  retarget(next: { host: string, port: number }): void
  /** Kills the open connections and refuses new ones until resume(). */
  refuse(how: Refusal): Promise<void>
  /** Forwards new connections again. */
  resume(): Promise<void>
  /** Stops listening and kills every connection. */
  close(): Promise<void>
}

interface Pair {
  client: net.Socket
  upstream: net.Socket
}

/** Starts a proxy to `target` on a free port of 127.0.0.1. */
export async function tcpProxy (first: { host: string, port: number }): Promise<TcpProxy> {
  let target = first
  const pairs = new Set<Pair>()
  let refusal: Refusal | undefined
  let forwarded = 0
  let server: net.Server | undefined
  let port = 0

  const forward = (client: net.Socket): void => {
    if (refusal === 'reset') {
      client.resetAndDestroy()
      return
    }
    if (refusal === 'starting') {
      client.on('error', () => {})
      client.once('data', () => {
        client.end(startingUp())
      })
      return
    }
    forwarded++
    const upstream = net.connect(target.port, target.host)
    const pair = { client, upstream }
    pairs.add(pair)
    const drop = (): void => {
      pairs.delete(pair)
      client.destroy()
      upstream.destroy()
    }
    // An error or close on either side ends both: the proxy never holds half a connection.
    client.on('error', drop).on('close', drop)
    upstream.on('error', drop).on('close', drop)
    client.pipe(upstream)
    upstream.pipe(client)
  }

  const listen = async (): Promise<void> => {
    const s = net.createServer(forward)
    s.on('error', () => {})
    await new Promise<void>((resolve, reject) => {
      s.once('error', reject)
      s.listen(port, '127.0.0.1', () => {
        s.off('error', reject)
        resolve()
      })
    })
    port = (s.address() as net.AddressInfo).port
    server = s
  }

  const stopListening = (): void => {
    // Does not wait for 'close': that waits for the accepted connections, which kill() ends.
    server?.close()
    server = undefined
  }

  const kill = (options: { reset?: boolean } = {}): number => {
    const count = pairs.size
    for (const pair of Array.from(pairs)) {
      pairs.delete(pair)
      if (options.reset === true) pair.client.resetAndDestroy()
      else pair.client.destroy()
      pair.upstream.destroy()
    }
    return count
  }

  await listen()

  return {
    get port () {
      return port
    },
    get open () {
      return pairs.size
    },
    get forwarded () {
      return forwarded
    },
    upstreamPorts: () => [...pairs].map(pair => pair.upstream.localPort).filter((p): p is number => p !== undefined),
    kill,
    retarget (next) {
      target = next
    },
    async refuse (how) {
      refusal = how
      if (how === 'closed') stopListening()
      else if (server === undefined) await listen()
      kill()
    },
    async resume () {
      refusal = undefined
      if (server === undefined) await listen()
    },
    async close () {
      refusal = 'closed'
      stopListening()
      kill()
    }
  }
}

/** PostgreSQL's answer to a connection while it starts: ErrorResponse, FATAL 57P03. */
function startingUp (): Buffer {
  const fields = [['S', 'FATAL'], ['V', 'FATAL'], ['C', '57P03'], ['M', 'the database system is starting up']]
  const body = Buffer.concat([
    ...fields.map(([type, value]) => Buffer.from(`${type}${value}\0`, 'utf8')),
    Buffer.from([0])
  ])
  const head = Buffer.alloc(5)
  head.write('E', 0, 'ascii')
  head.writeInt32BE(body.length + 4, 1)
  return Buffer.concat([head, body])
}
