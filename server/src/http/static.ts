/**
 * Serves the built console (web/dist) with the SPA fallback: any GET that is not an API path
 * and not an existing file gets index.html, so deep links like /kvm or /login load the app.
 * Hashed assets are cached for a year; index.html is revalidated on every load. Pre-compressed
 * `.br`/`.gz` siblings made at build time are sent when the browser accepts them. The file list
 * is read once at start (the console is immutable while the server runs), so a request never
 * touches a path the build did not produce.
 */
import { createReadStream, readdirSync, statSync } from 'node:fs';
import { extname, join, relative, sep } from 'node:path';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ApiError, NotFoundError, ServiceUnavailableError } from '../errors';
import type { AuthService } from '../services/auth/auth-service';
import { authenticate } from './auth';

const API_PREFIXES = ['/api/', '/janus/'];

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.jpg': 'image/jpeg',
  '.ico': 'image/x-icon',
  '.woff2': 'font/woff2',
  '.woff': 'font/woff',
  '.txt': 'text/plain; charset=utf-8',
  '.map': 'application/json; charset=utf-8',
  '.wasm': 'application/wasm',
};

interface StaticFile {
  path: string;
  size: number;
  br: { path: string; size: number } | null;
  gz: { path: string; size: number } | null;
}

function variant(path: string): { path: string; size: number } | null {
  try {
    const s = statSync(path);
    return s.isFile() ? { path, size: s.size } : null;
  } catch {
    return null;
  }
}

export function listFiles(root: string): Map<string, StaticFile> {
  const out = new Map<string, StaticFile>();
  const walk = (dir: string): void => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const full = join(dir, entry.name);
      if (entry.isDirectory()) walk(full);
      else if (entry.isFile() && !/\.(gz|br)$/.test(entry.name)) {
        out.set(`/${relative(root, full).split(sep).join('/')}`, {
          path: full,
          size: statSync(full).size,
          br: variant(`${full}.br`),
          gz: variant(`${full}.gz`),
        });
      }
    }
  };
  try {
    if (statSync(root).isDirectory()) walk(root);
  } catch {
    // not built: every page answers 503 below
  }
  return out;
}

export function isApiPath(url: string): boolean {
  const path = url.split('?')[0] ?? '';
  return path === '/api' || path === '/janus' || API_PREFIXES.some((p) => path.startsWith(p));
}

function sendFile(
  request: FastifyRequest,
  reply: FastifyReply,
  file: StaticFile,
  cache: string,
): FastifyReply {
  const accept = String(request.headers['accept-encoding'] ?? '');
  const chosen = (file.br && /\bbr\b/.test(accept) && { ...file.br, encoding: 'br' }) ||
    (file.gz && /\bgzip\b/.test(accept) && { ...file.gz, encoding: 'gzip' }) || {
      path: file.path,
      size: file.size,
      encoding: null,
    };
  reply
    .header('content-type', TYPES[extname(file.path)] ?? 'application/octet-stream')
    .header('content-length', chosen.size)
    .header('cache-control', cache)
    .header('x-content-type-options', 'nosniff');
  if (file.br || file.gz) reply.header('vary', 'accept-encoding');
  if (chosen.encoding) reply.header('content-encoding', chosen.encoding);
  if (request.method === 'HEAD') return reply.send();
  return reply.send(createReadStream(chosen.path));
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
      throw new ApiError(
        'MethodNotAllowedError',
        405,
        `Method ${request.method} is not allowed; use ${others.join(', ')}`,
      );
    }
    throw new NotFoundError(`No such route: ${request.method} ${path}`);
  };

  app.get('/*', { config: { public: true } }, async (request, reply) => {
    if (isApiPath(request.url)) return apiNotFound(request, false);
    let path: string;
    try {
      path = decodeURIComponent(request.url.split('?')[0] ?? '/');
    } catch {
      path = '/';
    }
    const file = files.get(path);
    if (file && path !== '/index.html') {
      const immutable = path.startsWith('/assets/');
      return sendFile(
        request,
        reply,
        file,
        immutable ? 'public, max-age=31536000, immutable' : 'no-cache',
      );
    }
    // A missing file with an extension is a 404, not the app (a stale chunk must fail loudly).
    if (/\.[a-z0-9]{1,8}$/i.test(path) && path !== '/index.html') {
      throw new NotFoundError(`No such file: ${path}`);
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
