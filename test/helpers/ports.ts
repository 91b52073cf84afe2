// A free TCP port of 127.0.0.1, for a server a test starts on a port it must know before it listens
// (and may start again on the same port).
import { createServer } from 'node:net'

/** A TCP port nobody listens on now. */
export async function freePort (): Promise<number> {
  const server = createServer()
  await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as { port: number }
  await new Promise(resolve => server.close(resolve))
  return port
}
