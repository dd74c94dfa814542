/** Serves the fleet's pages (page.ts, script.ts) at / and /ui/. */
import type { FastifyInstance, FastifyReply } from 'fastify';
import { PAGE_CSS, PAGE_HTML } from './page';
import { PAGE_JS } from './script';

const CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
  "form-action 'self'",
].join('; ');

function page(reply: FastifyReply, type: string, body: string): FastifyReply {
  return reply
    .header('content-type', type)
    .header('content-security-policy', CSP)
    .header('x-frame-options', 'DENY')
    .header('x-content-type-options', 'nosniff')
    .header('referrer-policy', 'same-origin')
    .header('cache-control', 'no-cache')
    .send(body);
}

export function registerPages(app: FastifyInstance): void {
  app.get('/', (_req, reply) => page(reply, 'text/html; charset=utf-8', PAGE_HTML));
  app.get('/ui/app.js', (_req, reply) => page(reply, 'text/javascript; charset=utf-8', PAGE_JS));
  app.get('/ui/style.css', (_req, reply) => page(reply, 'text/css; charset=utf-8', PAGE_CSS));
}
