/**
 * Serves the built console (web/dist) with the SPA fallback: any GET that is not an API path
 * and not an existing file gets index.html, so deep links like /kvm or /login load the app.
 * Hashed assets are cached for a year; index.html is revalidated on every load. Pre-compressed
 * `.br`/`.gz` siblings made at build time are sent when the browser accepts them.
 */
import { readdirSync, statSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import fastifyStatic from '@fastify/static';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { NotFoundError, ApiError } from '../errors';
import type { AuthService } from '../services/auth/auth-service';
import { authenticate } from './auth';

const API_PREFIXES = ['/api/', '/janus/'];

function listFiles(root: string): Set<string> {
  const out = new Set<string>();
  const walk = (dir: string): void => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const full = join(dir, entry.name);
      if (entry.isDirectory()) walk(full);
      else if (entry.isFile() && !/\.(gz|br)$/.test(entry.name)) {
        out.add(`/${relative(root, full).split(sep).join('/')}`);
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

export async function registerStatic(
  app: FastifyInstance,
  webDir: string,
  auth: AuthService,
  trustProxy: boolean,
): Promise<void> {
  const files = listFiles(webDir);
  await app.register(fastifyStatic, { root: webDir, serve: false, preCompressed: true });

  /** Unknown API paths: credentials first (never reveal routes to strangers), then 404/405. */
  const apiNotFound = async (request: FastifyRequest, authenticated: boolean): Promise<void> => {
    if (!authenticated) await authenticate(request, auth, trustProxy);
    const path = request.url.split('?')[0] ?? '';
    const others = (['GET', 'POST', 'PUT', 'DELETE', 'PATCH'] as const).filter(
      (m) => m !== request.method && app.hasRoute({ method: m, url: path }),
    );
    if (others.length > 0) {
      throw new ApiError('MethodNotAllowedError', 405, `Method ${request.method} is not allowed; use ${others.join(', ')}`);
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
    if (files.has(path) && path !== '/index.html') {
      const immutable = path.startsWith('/assets/');
      reply.header('cache-control', immutable ? 'public, max-age=31536000, immutable' : 'no-cache');
      return reply.sendFile(path.slice(1));
    }
    // A missing file with an extension is a 404, not the app (a stale chunk must fail loudly).
    if (/\.[a-z0-9]{1,8}$/i.test(path) && path !== '/index.html') {
      return reply.code(404).type('text/plain').send('Not Found');
    }
    if (!files.has('/index.html')) {
      return reply.code(503).type('text/plain').send('The console is not built yet: run `npm run build`.');
    }
    reply.header('cache-control', 'no-cache');
    return reply.sendFile('index.html');
  });

  // The global session hook has already run for these (their config is not public).
  app.setNotFoundHandler(async (request, reply) => {
    if (isApiPath(request.url)) return apiNotFound(request, true);
    return reply.code(404).type('text/plain').send('Not Found');
  });
}
