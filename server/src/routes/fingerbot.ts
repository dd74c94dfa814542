/** `/api/fingerbot/*` (wire-protocol.md 5.7): GET except upload and upgrade, as GL has them. */
import type { FastifyInstance } from 'fastify';
import { FINGERBOT_PRESS_MS } from '@kvm/protocol';
import { ValidatorError } from '../errors';
import type { FingerbotService } from '../services/fingerbot/fingerbot-service';
import { int } from '../validators';

/** The largest firmware package accepted. */
const PACKAGE_MAX_BYTES = 16 * 1024 * 1024;

export function fingerbotRoutes(app: FastifyInstance, fingerbot: FingerbotService): void {
  app.get('/api/fingerbot/exist', async () => fingerbot.getState());

  app.get('/api/fingerbot/click', async (request) => {
    const q = request.query as Record<string, unknown>;
    const pressMs = int('press_time', q['press_time'], FINGERBOT_PRESS_MS);
    const angle = int('angle_enum', q['angle_enum'], { min: 1, max: 2, fallback: 1 }) as 1 | 2;
    await fingerbot.click(pressMs, angle);
    return { result: 'success' };
  });

  app.get('/api/fingerbot/battery', async () => ({ battery: await fingerbot.battery() }));

  app.get('/api/fingerbot/local_version', async () => ({ version: await fingerbot.version() }));

  app.post('/api/fingerbot/upload', async (request) => {
    if (!request.isMultipart()) throw new ValidatorError('Expected a multipart form with a file');
    const part = await request.file({ limits: { fileSize: PACKAGE_MAX_BYTES, files: 1 } });
    if (!part || part.fieldname !== 'file') {
      throw new ValidatorError("The form field 'file' is missing");
    }
    const zip = await part.toBuffer();
    if (part.file.truncated) {
      throw new ValidatorError(`The package is larger than ${PACKAGE_MAX_BYTES} bytes`);
    }
    await fingerbot.upload(zip);
    return { filename: part.filename, size: zip.length, result: 'success' };
  });

  app.post('/api/fingerbot/upgrade', async () => {
    await fingerbot.upgrade();
    return { result: 'success' };
  });
}
