import type { FastifyRequest } from 'fastify';

/**
 * The client address the login rate limit counts by. Behind a reverse proxy (config
 * `server.trust_proxy`) it is X-Real-IP, then the first X-Forwarded-For (GL kvmd's order);
 * otherwise the socket's address, so a client cannot pick its own bucket.
 */
export function clientIp(request: FastifyRequest, trustProxy: boolean): string {
  if (trustProxy) {
    const real = request.headers['x-real-ip'];
    if (typeof real === 'string' && real.trim()) return real.trim();
    const fwd = request.headers['x-forwarded-for'];
    const first = (Array.isArray(fwd) ? fwd[0] : fwd)?.split(',')[0]?.trim();
    if (first) return first;
  }
  return request.socket.remoteAddress ?? 'unknown';
}
