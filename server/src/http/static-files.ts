/**
 * Files of a built folder served as they are (the device's console, the fleet's console): the
 * list read once, strong ETags, 304s, one byte range, pre-compressed `.br`/`.gz` siblings.
 * Revalidation and partial reads (RFC 9110): every representation has a strong ETag (size and
 * mtime, plus the encoding, since the .br and .gz bytes differ); If-None-Match (or, without it,
 * If-Modified-Since) answers 304, so a reload costs no body. One `bytes` range answers 206 (of
 * the representation sent, compressed or not), a range past the end 416; several ranges,
 * another unit or an If-Range other than the current ETag get the whole file (the RFC lets a
 * server ignore Range).
 */
import { createReadStream, readdirSync, statSync } from 'node:fs';
import { extname, join, relative, sep } from 'node:path';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { RangeNotSatisfiableError } from '../errors';

export const TYPES: Record<string, string> = {
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

/** One stored representation of a file: the file itself or a pre-compressed sibling. */
interface Representation {
  path: string;
  size: number;
  mtimeMs: number;
}

interface StaticFile extends Representation {
  br: Representation | null;
  gz: Representation | null;
}

function variant(path: string): Representation | null {
  try {
    const s = statSync(path);
    return s.isFile() ? { path, size: s.size, mtimeMs: s.mtimeMs } : null;
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
        const s = statSync(full);
        out.set(`/${relative(root, full).split(sep).join('/')}`, {
          path: full,
          size: s.size,
          mtimeMs: s.mtimeMs,
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

function etagOf(r: Representation, encoding: string | null): string {
  const mtime = Math.floor(r.mtimeMs).toString(36);
  return `"${r.size.toString(36)}-${mtime}${encoding ? `-${encoding}` : ''}"`;
}

/** If-None-Match's list against our tag, by the weak comparison RFC 9110 13.1.2 asks for. */
function noneMatch(header: string, etag: string): boolean {
  if (header.trim() === '*') return true;
  return header.split(',').some((tag) => tag.trim().replace(/^W\//, '') === etag);
}

/** True when the browser's copy is current: 304 (If-Modified-Since counts only without ETags). */
function notModified(request: FastifyRequest, etag: string, mtimeMs: number): boolean {
  const inm = request.headers['if-none-match'];
  if (inm !== undefined) return noneMatch(inm, etag);
  const ims = Date.parse(request.headers['if-modified-since'] ?? '');
  // HTTP dates have whole seconds
  return Number.isFinite(ims) && Math.floor(mtimeMs / 1000) * 1000 <= ims;
}

/**
 * The one byte range to send, 'whole' for the whole file (no Range, several ranges, another
 * unit, unparsable: all ignored as RFC 9110 14.2 allows), or 'unsatisfiable'.
 */
export function parseRange(
  header: string | undefined,
  size: number,
): { start: number; end: number } | 'whole' | 'unsatisfiable' {
  if (!header) return 'whole';
  const m = /^bytes=(\d*)-(\d*)$/.exec(header.trim());
  if (!m || (m[1] === '' && m[2] === '')) return 'whole';
  if (m[1] === '') {
    // suffix: the last N bytes
    const n = Number(m[2]);
    if (n === 0 || size === 0) return 'unsatisfiable';
    return { start: Math.max(0, size - n), end: size - 1 };
  }
  const start = Number(m[1]);
  const end = m[2] === '' ? size - 1 : Math.min(Number(m[2]), size - 1);
  if (m[2] !== '' && Number(m[2]) < start) return 'whole';
  if (start >= size) return 'unsatisfiable';
  return { start, end };
}

function representation(
  file: StaticFile,
  acceptEncoding: string,
): Representation & { encoding: string | null } {
  if (file.br && /\bbr\b/.test(acceptEncoding)) return { ...file.br, encoding: 'br' };
  if (file.gz && /\bgzip\b/.test(acceptEncoding)) return { ...file.gz, encoding: 'gzip' };
  return { path: file.path, size: file.size, mtimeMs: file.mtimeMs, encoding: null };
}

export function sendFile(
  request: FastifyRequest,
  reply: FastifyReply,
  file: StaticFile,
  cache: string,
): FastifyReply {
  const chosen = representation(file, String(request.headers['accept-encoding'] ?? ''));
  const etag = etagOf(chosen, chosen.encoding);
  const validators = (): void => {
    reply
      .header('cache-control', cache)
      .header('etag', etag)
      .header('last-modified', new Date(file.mtimeMs).toUTCString());
    if (file.br || file.gz) reply.header('vary', 'accept-encoding');
  };
  // The conditional comes before Range (RFC 9110 13.2.2).
  if (notModified(request, etag, file.mtimeMs)) {
    validators();
    return reply.code(304).send();
  }
  // An If-Range that is not our current ETag (an older build, or a date) asks for the whole file.
  const ifRange = request.headers['if-range'];
  const range =
    ifRange === undefined || ifRange === etag
      ? parseRange(request.headers.range, chosen.size)
      : 'whole';
  if (range === 'unsatisfiable') {
    // the error envelope follows, so none of the file's own headers (encoding, cache)
    reply.header('content-range', `bytes */${chosen.size}`);
    throw new RangeNotSatisfiableError(`The range is outside the file's ${chosen.size} bytes`);
  }
  validators();
  reply
    .header('content-type', TYPES[extname(file.path)] ?? 'application/octet-stream')
    .header('accept-ranges', 'bytes')
    .header('x-content-type-options', 'nosniff');
  if (chosen.encoding) reply.header('content-encoding', chosen.encoding);
  const part = range === 'whole' ? { start: 0, end: chosen.size - 1 } : range;
  if (range !== 'whole') {
    reply.code(206).header('content-range', `bytes ${part.start}-${part.end}/${chosen.size}`);
  }
  reply.header('content-length', part.end - part.start + 1);
  if (request.method === 'HEAD' || chosen.size === 0) return reply.send();
  return reply.send(createReadStream(chosen.path, { start: part.start, end: part.end }));
}

/** A request URL's path, percent-decoded ('/' when it does not decode). */
export function requestPath(url: string): string {
  try {
    return decodeURIComponent(url.split('?')[0] ?? '/');
  } catch {
    return '/';
  }
}

/**
 * Sends the built file at `path` (hashed `/assets/` ones are immutable, others revalidate);
 * null when there is no such file or it is `/index.html` (the app's page, which the caller sends).
 */
export function sendBuiltFile(
  request: FastifyRequest,
  reply: FastifyReply,
  files: Map<string, StaticFile>,
  path: string,
): FastifyReply | null {
  const file = files.get(path);
  if (!file || path === '/index.html') return null;
  const immutable = path.startsWith('/assets/');
  return sendFile(
    request,
    reply,
    file,
    immutable ? 'public, max-age=31536000, immutable' : 'no-cache',
  );
}
