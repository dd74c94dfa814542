/** The in-process transport: `app.inject`, other clients on addresses of 10.0.0.0/8. */
import type { FastifyInstance, HTTPMethods } from 'fastify';
import type { Prng } from './prng';
import { TransportTimeout, type HttpTransport, type WireRequest } from './http-runner';
import type { HttpAnswer } from './oracle';

export function injectTransport(app: FastifyInstance, prng: Prng): HttpTransport {
  return {
    async send(req: WireRequest): Promise<HttpAnswer> {
      const remoteAddress =
        req.source === 'admin' ? '127.0.0.1' : `10.${prng.int(0, 255)}.${prng.int(0, 255)}.1`;
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new TransportTimeout()), req.timeoutMs);
      });
      try {
        const res = await Promise.race([
          app.inject({
            method: req.method as HTTPMethods,
            url: req.url,
            headers: req.headers,
            // A Content-Length lie needs a real socket (the long run has one); inject sets it.
            ...(req.body !== null ? { payload: req.body } : {}),
            remoteAddress,
          }),
          timeout,
        ]);
        return {
          status: res.statusCode,
          contentType: String(res.headers['content-type'] ?? ''),
          body: res.rawPayload,
        };
      } finally {
        clearTimeout(timer);
      }
    },
  };
}
