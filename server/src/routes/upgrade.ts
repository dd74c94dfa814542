/**
 * `/api/upgrade/*` packages and channels (wire-protocol.md 5.6 and 5.13; docs/api.md, Upgrade):
 * version, compare, download, beta/download, download_info, download_cancel, upload, status and
 * start (the A/B install, docs/upgrade.md).
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { BadRequestError } from '../errors';
import type { UpgradeService } from '../services/upgrade/upgrade-service';

/** GL 5.13: Content-Length is required (a chunked body has none). */
function contentLength(request: FastifyRequest): number {
  const raw = request.headers['content-length'];
  if (request.headers['transfer-encoding'] !== undefined || raw === undefined) {
    throw new BadRequestError('Content-Length header is required');
  }
  const n = /^\s*\d+\s*$/.test(raw) ? Number(raw) : Number.NaN;
  if (!Number.isSafeInteger(n)) throw new BadRequestError('Content-Length header is invalid');
  return n;
}

function isFalse(v: unknown): boolean {
  return typeof v === 'string' && /^(false|0)$/i.test(v.trim());
}

function isTrue(v: unknown): boolean {
  return typeof v === 'string' && /^(true|1)$/i.test(v.trim());
}

export function upgradeRoutes(app: FastifyInstance, upgrade: UpgradeService): void {
  app.get('/api/upgrade/version', async () => upgrade.version());
  app.get('/api/upgrade/compare', async () => upgrade.compare());
  app.get('/api/upgrade/download', async () => upgrade.startDownload(false));
  app.get('/api/upgrade/beta/download', async () => upgrade.startDownload(true));
  app.get('/api/upgrade/download_info', async () => upgrade.downloadInfo());
  app.get('/api/upgrade/download_cancel', async () => upgrade.cancelDownload());
  app.get('/api/upgrade/status', async () => upgrade.status());

  // GL 5.13: 200 for every refusal of the package; save_config defaults to true, skip_verify
  // and allow_downgrade to false. Ours: an older release is 409 UpgradeDowngradeError until
  // the admin confirms it with allow_downgrade=1.
  app.post('/api/upgrade/start', async (request) => {
    const q = request.query as Record<string, unknown>;
    return upgrade.start({
      saveConfig: !isFalse(q['save_config']),
      skipVerify: isTrue(q['skip_verify']),
      allowDowngrade: isTrue(q['allow_downgrade']),
    });
  });

  app.post('/api/upgrade/upload', async (request) => {
    const declared = contentLength(request);
    if (!request.isMultipart()) {
      throw new BadRequestError("Expected a multipart form with the field 'file'");
    }
    // 413 before a byte is read when the disk cannot hold it.
    await upgrade.prepareUpload(declared);
    const part = await request.file({ limits: { fileSize: declared, files: 1, fields: 1 } });
    if (!part || part.fieldname !== 'file' || Object.keys(part.fields).length !== 1) {
      throw new BadRequestError("The first form field must be 'file'");
    }
    return upgrade.upload(part.filename, part.file);
  });
}
