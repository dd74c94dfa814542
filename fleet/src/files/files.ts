/**
 * Files the fleet holds (docs/cloud.md "Files, batch actions and rollouts"): disk images a batch
 * action mounts, firmware packages a rollout installs. The bytes live in `<data>/files/<id>`
 * (replicas of one fleet share the data folder), the rows in `files`. An upload is streamed to
 * `<id>.part` with its SHA-256 taken on the way, synced, renamed, then its row inserted: a cut
 * upload leaves neither. A package is read with the device's own package reader
 * (server/src/services/upgrade/package-reader.ts): its manifest's version, every file's hash.
 */
import { createHash, randomUUID } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { mkdir, open, rename, rm, statfs } from 'node:fs/promises';
import { join } from 'node:path';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { FleetFile } from '@kvm/protocol';
import { verifyPackage } from '../../../server/src/services/upgrade/package-reader';
import type { FleetContext, FleetUser } from '../context';
import { uniqueViolation, type Db } from '../db/pool';
import { UUID_RE } from '../devices/devices';
import { ApiError, BadRequestError, NotFoundError, ValidatorError } from '../errors';
import { PayloadTooLargeError } from '../../../server/src/errors';
import { adminOrThrow, ok, userOrThrow } from '../http';

export const FILES_MAX_BYTES_DEFAULT = 4 * 1024 ** 3;
/** A file's name: 1-128 of [A-Za-z0-9._-], not starting with a dot. */
export const FILE_NAME_RE = /^[A-Za-z0-9_-][A-Za-z0-9._-]{0,127}$/;

/** 411: a file upload needs its Content-Length (the size is checked before reading). */
export class LengthRequiredError extends ApiError {
  override readonly status: number = 411;
  static override readonly defaultMessage: string = 'The Content-Length header is required';
}

/** 409: a file of this kind and name exists, or a running job uses the file. */
export class FileConflictError extends ApiError {
  override readonly status: number = 409;
}

interface FileRow {
  id: string;
  kind: 'image' | 'package';
  name: string;
  size: string;
  sha256: string;
  version: string | null;
  created_at: Date;
}

function toFile(r: FileRow): FleetFile {
  return {
    id: r.id,
    kind: r.kind,
    name: r.name,
    size: Number(r.size),
    sha256: r.sha256,
    version: r.version,
    created_at: r.created_at.getTime(),
  };
}

/** The version of a release package, or null when `path` is not one (bad archive or hashes). */
export async function packageVersion(path: string): Promise<string | null> {
  // The fleet holds no release keys (the device checks the signature): the first read stops at
  // the signature with the manifest known; the second checks every file against it.
  const first = await verifyPackage(path, [], '', 'V0.0.0');
  const m = first.manifest;
  if (!m) return null;
  const full = await verifyPackage(path, [], m.model, m.min_version, {
    allowUnsigned: true,
    allowDowngrade: true,
  });
  return full.firmware_valid ? m.version : null;
}

export class Files {
  constructor(
    private readonly db: Db,
    private readonly dataDir: string,
    private readonly maxBytes: number,
  ) {}

  get dir(): string {
    return join(this.dataDir, 'files');
  }

  pathOf(id: string): string {
    return join(this.dir, id);
  }

  async list(): Promise<FleetFile[]> {
    const r = await this.db.query<FileRow>('SELECT * FROM files ORDER BY kind, name');
    return r.rows.map(toFile);
  }

  async get(id: string): Promise<FleetFile | null> {
    if (!UUID_RE.test(id)) return null;
    const r = await this.db.query<FileRow>('SELECT * FROM files WHERE id = $1', [id]);
    return r.rows[0] ? toFile(r.rows[0]) : null;
  }

  /** Stores `body` (`length` bytes) as `kind`/`name`; refusals come before a byte is read. */
  async put(
    user: FleetUser,
    kind: string,
    name: string,
    length: number,
    body: NodeJS.ReadableStream,
  ): Promise<FleetFile> {
    if (kind !== 'image' && kind !== 'package') {
      throw new ValidatorError('kind must be image or package');
    }
    if (!FILE_NAME_RE.test(name)) {
      throw new ValidatorError(
        'name must be 1-128 of letters, digits, . _ - and must not start with a dot',
      );
    }
    if (length > this.maxBytes) {
      throw new PayloadTooLargeError(
        `The file is ${length} bytes; the fleet takes at most ${this.maxBytes}`,
      );
    }
    await mkdir(this.dir, { recursive: true });
    const fs = await statfs(this.dir);
    const free = fs.bavail * fs.bsize;
    if (length > free) {
      throw new PayloadTooLargeError(
        `Not enough space: the file needs ${length} bytes, ${free} bytes are free`,
      );
    }
    const exists = await this.db.query('SELECT 1 FROM files WHERE kind = $1 AND name = $2', [
      kind,
      name,
    ]);
    if (exists.rowCount) throw new FileConflictError(`A ${kind} named ${name} exists already`);

    const id = randomUUID();
    const part = join(this.dir, `${id}.part`);
    const final = this.pathOf(id);
    const hash = createHash('sha256');
    let got = 0;
    try {
      await pipeline(
        body,
        new Transform({
          transform(chunk: Buffer, _enc, cb) {
            got += chunk.byteLength;
            if (got > length) {
              cb(new BadRequestError('The body is longer than its Content-Length'));
              return;
            }
            hash.update(chunk);
            cb(null, chunk);
          },
        }),
        createWriteStream(part, { flags: 'wx', mode: 0o600 }),
      );
      if (got !== length) throw new BadRequestError('The body ended before its Content-Length');
      const fh = await open(part, 'r');
      try {
        await fh.sync();
      } finally {
        await fh.close();
      }
      let version: string | null = null;
      if (kind === 'package') {
        version = await packageVersion(part);
        if (!version) {
          throw new ValidatorError('This is not a firmware package (or it is damaged)');
        }
      }
      await rename(part, final);
      try {
        const r = await this.db.query<FileRow>(
          `INSERT INTO files (id, kind, name, size, sha256, version, created_by)
           VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING *`,
          [id, kind, name, length, hash.digest('hex'), version, user.accountId],
        );
        return toFile(r.rows[0]!);
      } catch (e) {
        await rm(final, { force: true });
        if (uniqueViolation(e) !== null) {
          throw new FileConflictError(`A ${kind} named ${name} exists already`);
        }
        throw e;
      }
    } catch (e) {
      await rm(part, { force: true });
      throw e;
    }
  }

  /** Removes a file no running job uses (409 while one does). */
  async remove(id: string): Promise<FleetFile> {
    const f = await this.get(id);
    if (!f) throw new NotFoundError('No such file');
    const r = await this.db.query<FileRow>(
      `DELETE FROM files WHERE id = $1
       AND NOT EXISTS (SELECT 1 FROM jobs WHERE file_id = $1 AND state = 'running')
       RETURNING *`,
      [id],
    );
    if (!r.rowCount) throw new FileConflictError('A running job uses this file');
    await rm(this.pathOf(id), { force: true });
    return f;
  }
}

/** `GET files`, `PUT files/:kind/:name` (admin, raw body), `DELETE files/:id` (admin). */
export async function registerFileRoutes(
  app: FastifyInstance,
  ctx: FleetContext,
  files: Files,
  note: (kind: string, user: FleetUser, detail: Record<string, unknown>) => void,
): Promise<void> {
  app.get('/cloud-basic/v1/files', async (req) => {
    await userOrThrow(req, ctx);
    return ok({ files: await files.list() });
  });
  app.delete('/cloud-basic/v1/files/:id', async (req) => {
    const user = await adminOrThrow(req, ctx);
    const f = await files.remove((req.params as { id: string }).id);
    note('file_removed', user, { id: f.id, kind: f.kind, name: f.name });
    return ok({});
  });
  await app.register(async (scope) => {
    // The body is streamed to disk as it comes, never parsed.
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser('*', (_req, _payload, done) => done(null));
    scope.put('/cloud-basic/v1/files/:kind/:name', async (req: FastifyRequest) => {
      const user = await adminOrThrow(req, ctx);
      const { kind, name } = req.params as { kind: string; name: string };
      const cl = req.headers['content-length'];
      if (req.headers['transfer-encoding'] !== undefined) {
        throw new BadRequestError('A chunked body is refused: send it with its Content-Length');
      }
      if (cl === undefined) throw new LengthRequiredError();
      if (!/^\d{1,16}$/.test(cl)) throw new BadRequestError('Bad Content-Length');
      const f = await files.put(user, kind, name, Number(cl), req.raw);
      note('file_added', user, { id: f.id, kind: f.kind, name: f.name, size: f.size });
      return ok({ file: f });
    });
  });
}
