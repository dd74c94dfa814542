/**
 * Serves the fleet console (web/src/fleet/, built by `node scripts/build.mjs fleet` into
 * fleet/dist/www) at `/`: hashed assets under /assets/ (immutable, pre-compressed .br/.gz sent
 * when accepted), index.html (no-cache) for every other page path so the console's client-side
 * routes (/devices, /wall, /jobs/<id>, /admin/users...) load on a reload or a link. The API
 * (/cloud-basic/), the tunnel (/d/) and any path with an extension are never the page: a missing
 * file is a 404 in the envelope (a stale chunk must fail loudly). Every answer carries the
 * security headers below. The file list is read once at start.
 */
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FastifyInstance, FastifyReply } from 'fastify';
import {
  listFiles,
  requestPath,
  sendBuiltFile,
  sendFile,
} from '../../../server/src/http/static-files';
import { NotFoundError, ServiceUnavailableError } from '../errors';

/**
 * Scripts only from this origin (the build has no inline script). Styles allow inline: antd's
 * CSS-in-JS writes <style> elements at run time. Wall pictures are blob: URLs.
 */
export const FLEET_CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data: blob:",
  "connect-src 'self'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
  "form-action 'self'",
].join('; ');

/**
 * Where the built console is: FLEET_WWW, else `www` beside the bundle (fleet/dist/main.js), or
 * fleet/dist/www when running from source (tests).
 */
export function defaultWwwDir(): string {
  if (process.env.FLEET_WWW) return process.env.FLEET_WWW;
  const here = dirname(fileURLToPath(import.meta.url));
  const beside = join(here, 'www');
  return existsSync(beside) ? beside : join(here, '../../dist/www');
}

function secure(reply: FastifyReply): FastifyReply {
  return reply
    .header('content-security-policy', FLEET_CSP)
    .header('x-frame-options', 'DENY')
    .header('x-content-type-options', 'nosniff')
    .header('referrer-policy', 'same-origin');
}

/** Paths that are never the console's page. */
function notAPage(path: string): boolean {
  return (
    path.startsWith('/cloud-basic/') ||
    path === '/d' ||
    path.startsWith('/d/') ||
    path.startsWith('/assets/') ||
    /\.[a-z0-9]{1,8}$/i.test(path)
  );
}

export function registerPages(app: FastifyInstance, wwwDir: string = defaultWwwDir()): void {
  const files = listFiles(wwwDir);
  app.get('/*', async (request, reply) => {
    const path = requestPath(request.url);
    secure(reply);
    const sent = sendBuiltFile(request, reply, files, path);
    if (sent) return sent;
    if (notAPage(path) && path !== '/index.html') {
      throw new NotFoundError(
        path.startsWith('/cloud-basic/') ? `No route GET ${path}` : `No such file: ${path}`,
      );
    }
    const index = files.get('/index.html');
    if (!index) {
      throw new ServiceUnavailableError(
        'The fleet console is not built: run `node scripts/build.mjs fleet`.',
      );
    }
    return sendFile(request, reply, index, 'no-cache');
  });
}
