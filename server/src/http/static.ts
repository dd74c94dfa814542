/**
 * Serves the built console (web/dist) with the SPA fallback: the console's own routes (SPEC 2,
 * web/src/app/router.tsx) get index.html, so deep links like /kvm or /login load the app; any
 * other path that is not a file is a 404 in kvmd's envelope (issue 13: `/streamer/nothing` or
 * `/foo/bar.cgi` answered with the console's HTML looked like success to a client).
 * Hashed assets are cached for a year; index.html is revalidated on every load. Pre-compressed
 * `.br`/`.gz` siblings made at build time are sent when the browser accepts them. The file list
 * is read once at start (the console is immutable while the server runs), so a request never
 * touches a path the build did not produce.
 * How a file is sent (ETags, 304, ranges, encodings) is static-files.ts.
 */
import { createReadStream } from 'node:fs';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { MethodNotAllowedError, NotFoundError, ServiceUnavailableError } from '../errors';
import type { AuthService } from '../services/auth/auth-service';
import { listFiles, requestPath, sendBuiltFile, sendFile, TYPES } from './static-files';
import { authenticate } from './auth';

const API_PREFIXES = ['/api/', '/janus/'];

/** The console's routes (web/src/app/router.tsx), each also with a trailing slash. */
export const CONSOLE_ROUTES: ReadonlySet<string> = new Set([
  '/',
  '/index.html',
  '/kvm',
  '/login',
  '/init',
  '/twofactor',
  '/upgrading',
  '/webterm',
]);

/** Upstream names (ustreamer, kvmd's extras and static files): never the console's page. */
const UPSTREAM_PREFIXES = ['/streamer', '/extras', '/share', '/kvmd'];

/** A browser's page navigation to a path that could be a console page (no extension). */
function wantsConsolePage(request: FastifyRequest, path: string): boolean {
  if (request.method !== 'GET' || /\.[a-z0-9]{1,8}$/i.test(path)) return false;
  if (UPSTREAM_PREFIXES.some((p) => path === p || path.startsWith(`${p}/`))) return false;
  return /\btext\/html\b/.test(String(request.headers.accept ?? ''));
}

export function isConsoleRoute(path: string): boolean {
  return CONSOLE_ROUTES.has(path) || (path.endsWith('/') && CONSOLE_ROUTES.has(path.slice(0, -1)));
}

export function isApiPath(url: string): boolean {
  const path = url.split('?')[0] ?? '';
  return path === '/api' || path === '/janus' || API_PREFIXES.some((p) => path.startsWith(p));
}

export function registerStatic(
  app: FastifyInstance,
  webDir: string,
  auth: AuthService,
  trustProxy: boolean,
): void {
  const files = listFiles(webDir);

  /** Unknown API paths: credentials first (never reveal routes to strangers), then 404/405. */
  const apiNotFound = async (request: FastifyRequest, authenticated: boolean): Promise<never> => {
    if (!authenticated) await authenticate(request, auth, trustProxy);
    const path = request.url.split('?')[0] ?? '';
    const others = (['GET', 'POST', 'PUT', 'DELETE', 'PATCH'] as const).filter(
      (m) => m !== request.method && app.hasRoute({ method: m, url: path }),
    );
    if (others.length > 0) {
      throw new MethodNotAllowedError(
        `Method ${request.method} is not allowed; use ${others.join(', ')}`,
      );
    }
    throw new NotFoundError(`No such route: ${request.method} ${path}`);
  };

  app.get('/*', { config: { public: true } }, async (request, reply) => {
    if (isApiPath(request.url)) return apiNotFound(request, false);
    const path = requestPath(request.url);
    const sent = sendBuiltFile(request, reply, files, path);
    if (sent) return sent;
    // A missing file is a 404, not the app (a stale chunk must fail loudly), and so is any
    // path the console has no page for. SPEC 2 shows the no-permission page for those: a
    // browser navigating to one gets the console with the 404 status (the page and a client
    // both see it failed); every other request (and any path under ustreamer's or kvmd's
    // names) gets the envelope.
    if (!isConsoleRoute(path)) {
      const index = files.get('/index.html');
      if (index && wantsConsolePage(request, path)) {
        return reply
          .code(404)
          .header('content-type', TYPES['.html'])
          .header('cache-control', 'no-cache')
          .header('x-content-type-options', 'nosniff')
          .send(createReadStream(index.path));
      }
      throw new NotFoundError(
        /\.[a-z0-9]{1,8}$/i.test(path) ? `No such file: ${path}` : `No such page: ${path}`,
      );
    }
    const index = files.get('/index.html');
    if (!index) {
      throw new ServiceUnavailableError('The console is not built yet: run `npm run build`.');
    }
    return sendFile(request, reply, index, 'no-cache');
  });

  // The global session hook has already run for these (their config is not public).
  app.setNotFoundHandler(async (request) => {
    if (isApiPath(request.url)) return apiNotFound(request, true);
    // Every error answer is the envelope (issue 9, item 19), files included.
    throw new NotFoundError(`No such page: ${request.method} ${request.url.split('?')[0] ?? '/'}`);
  });
}
