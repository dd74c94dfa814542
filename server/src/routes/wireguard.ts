/**
 * `/api/wireguard/*`: the WireGuard app (issue 27, docs/api.md "WireGuard"), in GL's
 * `/api/tailscale/*` pattern: `status`, `config` (read and set), `start`, `stop`, `logout`.
 * A configuration comes as `text/plain` (the wg-quick file), JSON `{"config": "<text>"}` or a
 * multipart form with the file in `file`; at most WG_CONFIG_MAX_BYTES (413 over it).
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { WG_CONFIG_MAX_BYTES } from '@kvm/protocol/wireguard';
import { NotFoundError, PayloadTooLargeError, ValidatorError } from '../errors';
import type { AppsService } from '../services/apps/apps-service';
import { WireguardService } from '../services/apps/wireguard-service';

/** Room for JSON escapes and a multipart envelope around the largest configuration. */
export const WG_BODY_LIMIT = 2 * WG_CONFIG_MAX_BYTES + 16 * 1024;

async function configText(request: FastifyRequest): Promise<string> {
  if (request.isMultipart()) {
    let part;
    try {
      part = await request.file({
        limits: { fileSize: WG_CONFIG_MAX_BYTES, files: 1, fields: 0, parts: 1 },
      });
    } catch {
      throw new ValidatorError('Malformed multipart body');
    }
    if (!part || part.fieldname !== 'file') {
      throw new ValidatorError("The form field 'file' is missing");
    }
    let data: Buffer;
    try {
      data = await part.toBuffer();
    } catch {
      throw new PayloadTooLargeError(
        `The configuration is larger than ${WG_CONFIG_MAX_BYTES} bytes`,
      );
    }
    if (part.file.truncated) {
      throw new PayloadTooLargeError(
        `The configuration is larger than ${WG_CONFIG_MAX_BYTES} bytes`,
      );
    }
    return utf8(data);
  }
  const body = request.body;
  if (typeof body === 'string') return body;
  if (Buffer.isBuffer(body)) return utf8(body);
  if (body && typeof body === 'object' && !Array.isArray(body)) {
    const config = (body as Record<string, unknown>)['config'];
    if (typeof config === 'string') return config;
  }
  throw new ValidatorError(
    'The argument \'config\' must be the wg-quick configuration (text/plain, JSON {"config": …} or a file)',
  );
}

function utf8(data: Buffer): string {
  const text = new TextDecoder('utf-8', { fatal: false }).decode(data);
  if (text.includes('\uFFFD')) throw new ValidatorError('The configuration is not UTF-8 text');
  return text;
}

export function wireguardRoutes(app: FastifyInstance, apps: AppsService): void {
  const wg = WireguardService.of(apps);
  // The wg-quick text as it is (this scope only).
  app.addContentTypeParser('text/plain', { parseAs: 'buffer' }, (_request, body, done) => {
    done(null, body);
  });
  const service = (): WireguardService => {
    if (!wg) throw new NotFoundError('This device has no WireGuard app');
    return wg;
  };

  app.get('/api/wireguard/status', async () => service().status());

  app.get('/api/wireguard/config', async () => ({ config: service().config() }));

  app.post('/api/wireguard/config', { bodyLimit: WG_BODY_LIMIT }, async (request) => {
    const s = service();
    return { config: await s.setConfig(await configText(request)) };
  });

  app.post('/api/wireguard/start', async () => service().start());

  app.post('/api/wireguard/stop', async () => service().stop());

  app.post('/api/wireguard/logout', async () => service().logout());
}
