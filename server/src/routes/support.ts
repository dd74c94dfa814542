/**
 * Help and logs: `GET /api/upgrade/log` (the masked log bundle, GL §5.6/§5.13), `POST
 * /api/upgrade/log` (GL 1.10: the front end's log, ≤ 1 MiB), and contact support
 * (`/api/support/*`, SPEC 3/5).
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { TooManyRequestsError, ValidatorError } from '../errors';
import { FRONTEND_LOG_MAX_BYTES, type LogBundle } from '../services/support/log-bundle';
import {
  SUPPORT_CONTACT_MAX_CHARS,
  SUPPORT_IMAGE_MAX_BYTES,
  SUPPORT_IMAGE_TOO_LARGE,
  SUPPORT_MAX_IMAGES,
  SUPPORT_MESSAGE_MAX_CHARS,
  type SupportImage,
  type SupportService,
} from '../services/support/support-service';

export class LogExportBusyError extends TooManyRequestsError {
  static override readonly defaultMessage = 'A log export for this session is already running';
}

/** The whole multipart body of a support request: 8 images of 10 MB and the text fields. */
export const SUPPORT_BODY_LIMIT = SUPPORT_MAX_IMAGES * SUPPORT_IMAGE_MAX_BYTES + 1024 * 1024;

function owner(request: FastifyRequest): string {
  return request.auth?.tokenHash ?? `user:${request.auth?.user ?? ''}`;
}

export function supportRoutes(
  app: FastifyInstance,
  opts: { bundle: LogBundle; support: SupportService },
): void {
  const exporting = new Set<string>();

  app.get('/api/upgrade/log', async (request, reply) => {
    const key = owner(request);
    if (exporting.has(key)) throw new LogExportBusyError();
    exporting.add(key);
    try {
      const { name, zip } = await opts.bundle.build();
      return await reply
        .header('content-type', 'application/zip')
        .header('content-length', String(zip.length))
        .header('content-disposition', `attachment; filename=${name}`)
        .header('cache-control', 'no-store')
        .send(zip);
    } finally {
      exporting.delete(key);
    }
  });

  void app.register(async (scope) => {
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser('*', { parseAs: 'buffer' }, (_req, body, done) => done(null, body));
    scope.post('/api/upgrade/log', { bodyLimit: FRONTEND_LOG_MAX_BYTES }, async (request) => {
      const body = request.body;
      const text = Buffer.isBuffer(body) ? body.toString('utf8') : '';
      await opts.bundle.saveFrontendLog(text);
      return { size: Buffer.byteLength(text) };
    });
  });

  app.post('/api/support/submit', { bodyLimit: SUPPORT_BODY_LIMIT }, async (request) => {
    if (!request.isMultipart())
      throw new ValidatorError('Expected a multipart form with message, contact and image files');
    const fields: Record<string, string> = {};
    const images: SupportImage[] = [];
    // throwFileSizeLimit off: our own message for a large image, from `truncated` (the
    // plugin reads the option at run time; its parts() type omits it).
    const options = {
      throwFileSizeLimit: false,
      limits: {
        files: SUPPORT_MAX_IMAGES + 1,
        fileSize: SUPPORT_IMAGE_MAX_BYTES + 1,
        fields: 8,
        fieldSize: SUPPORT_MESSAGE_MAX_CHARS * 4,
      },
    };
    const parts = request.parts(options as Parameters<typeof request.parts>[0]);
    for await (const part of parts) {
      if (part.type === 'file') {
        if (!/^image\d{0,2}$/.test(part.fieldname) && part.fieldname !== 'files')
          throw new ValidatorError(`${part.fieldname.slice(0, 32)}: unexpected file field`);
        if (images.length >= SUPPORT_MAX_IMAGES)
          throw new ValidatorError(`images: at most ${SUPPORT_MAX_IMAGES} images`);
        const data = await part.toBuffer();
        if (part.file.truncated || data.length > SUPPORT_IMAGE_MAX_BYTES)
          throw new ValidatorError(`${part.fieldname}: ${SUPPORT_IMAGE_TOO_LARGE}`);
        images.push({ field: part.fieldname, filename: part.filename ?? '', data });
      } else if (part.fieldname === 'message' || part.fieldname === 'contact') {
        if (part.valueTruncated) throw new ValidatorError(`${part.fieldname}: too long`);
        fields[part.fieldname] = String(part.value ?? '');
      }
    }
    if ((fields['contact'] ?? '').length > SUPPORT_CONTACT_MAX_CHARS)
      throw new ValidatorError(`contact: at most ${SUPPORT_CONTACT_MAX_CHARS} characters`);
    // Distinct names inside the bundle when every image came as `files`.
    images.forEach((image, i) => {
      if (image.field === 'files') image.field = `image${i + 1}`;
    });
    return opts.support.submit({
      message: fields['message'] ?? '',
      contact: fields['contact'] ?? '',
      images,
    });
  });

  app.get('/api/support/bundles', async () => ({ bundles: await opts.support.list() }));

  app.get('/api/support/bundles/:name', async (request, reply) => {
    const { name } = request.params as { name: string };
    const data = await opts.support.read(name);
    return reply
      .header('content-type', 'application/zip')
      .header('content-length', String(data.length))
      .header('content-disposition', `attachment; filename=${name}`)
      .send(data);
  });
}
