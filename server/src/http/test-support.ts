/** Shared by the HTTP tests (not shipped): raw requests on a socket, cut after the test. */
import { connect, type Socket } from 'node:net';

/** Sockets the tests opened; `destroyAll()` in the file's afterEach cuts them before app.close(). */
export class RawSockets {
  private readonly open: Socket[] = [];

  /** Cuts every socket: a request still waiting for its body would make app.close() wait. */
  destroyAll(): void {
    for (const s of this.open.splice(0)) s.destroy();
  }

  /**
   * Sends only the head of a POST that expects 100 (a 1 MiB octet-stream body announced, none
   * sent) with `extra` header lines, and answers a reader of all that came back so far.
   */
  async headOnly(port: number, path: string, extra = ''): Promise<() => string> {
    const socket = connect(port, '127.0.0.1');
    this.open.push(socket);
    let received = '';
    socket.on('data', (chunk: Buffer) => (received += chunk.toString('latin1')));
    socket.on('error', () => undefined);
    socket.write(
      `POST ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nExpect: 100-continue\r\n` +
        `Content-Type: application/octet-stream\r\nContent-Length: 1048576\r\n${extra}\r\n`,
    );
    return () => received;
  }
}
