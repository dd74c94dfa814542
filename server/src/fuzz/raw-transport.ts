/**
 * Raw HTTP/1.1 over a TCP socket to a loopback server, so a request can carry what a real
 * client library refuses to send (a lying Content-Length, odd methods, broken escapes).
 * `source: 'other'` requests leave from 127.0.0.2-254 (the whole of 127/8 is loopback).
 */
import { connect } from 'node:net';
import type { Prng } from './prng';
import { TransportTimeout, type HttpTransport, type WireRequest } from './http-runner';
import type { HttpAnswer } from './oracle';

function parse(raw: Buffer): HttpAnswer {
  const end = raw.indexOf('\r\n\r\n');
  if (end < 0) throw new Error('no header end');
  const head = raw.subarray(0, end).toString('latin1').split('\r\n');
  const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(head[0] ?? '')?.[1] ?? 0);
  const headers: Record<string, string> = {};
  for (const line of head.slice(1)) {
    const i = line.indexOf(':');
    if (i > 0) headers[line.slice(0, i).trim().toLowerCase()] = line.slice(i + 1).trim();
  }
  let body = raw.subarray(end + 4);
  if (/chunked/i.test(headers['transfer-encoding'] ?? '')) {
    const parts: Buffer[] = [];
    let at = 0;
    for (;;) {
      const nl = body.indexOf('\r\n', at);
      if (nl < 0) break;
      const size = parseInt(body.subarray(at, nl).toString('latin1'), 16);
      if (!Number.isFinite(size) || size === 0) break;
      parts.push(body.subarray(nl + 2, nl + 2 + size));
      at = nl + 2 + size + 2;
    }
    body = Buffer.concat(parts);
  }
  return { status, contentType: headers['content-type'] ?? '', body };
}

export function rawTransport(port: number, prng: Prng): HttpTransport {
  return {
    send(req: WireRequest): Promise<HttpAnswer> {
      const localAddress = req.source === 'admin' ? '127.0.0.1' : `127.0.0.${prng.int(2, 254)}`;
      return new Promise((resolve, reject) => {
        const socket = connect({ host: '127.0.0.1', port, localAddress });
        const chunks: Buffer[] = [];
        const timer = setTimeout(() => {
          socket.destroy();
          reject(new TransportTimeout());
        }, req.timeoutMs);
        socket.on('data', (c: Buffer) => chunks.push(c));
        socket.on('error', (err) => {
          clearTimeout(timer);
          // An answer may have arrived before a reset (the server refused the body and closed).
          const raw = Buffer.concat(chunks);
          if (raw.includes('\r\n\r\n')) resolve(parse(raw));
          else
            reject(
              Object.assign(new Error(`${req.method} ${req.url.slice(0, 80)}: ${err.message}`), {
                code: (err as NodeJS.ErrnoException).code,
              }),
            );
        });
        socket.on('end', () => {
          clearTimeout(timer);
          socket.end();
          try {
            resolve(parse(Buffer.concat(chunks)));
          } catch (err) {
            reject(err as Error);
          }
        });
        socket.on('connect', () => {
          const body = req.body ?? Buffer.alloc(0);
          const lines = [`${req.method} ${req.url} HTTP/1.1`, `host: 127.0.0.1:${port}`];
          lines.push('connection: close');
          for (const [k, v] of Object.entries(req.headers)) lines.push(`${k}: ${v}`);
          const length = req.lengthLie ?? (req.body !== null ? body.length : null);
          if (length !== null) lines.push(`content-length: ${length}`);
          socket.write(`${lines.join('\r\n')}\r\n\r\n`);
          if (body.length) socket.write(body);
        });
      });
    },
  };
}
