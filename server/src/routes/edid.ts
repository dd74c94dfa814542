/**
 * `/api/upgrade/edid`, `get_edid`, `edid_list` (GL §5.6, 5.13; docs/api.md). Checks, storage and
 * the display: services/system/edid-service.ts.
 */
import type { FastifyInstance } from 'fastify';
import { readForm } from '../http/forms';
import type { EdidService } from '../services/system/edid-service';

/** A form with one EDID field: 512 hex characters and whitespace fit many times over. */
export const EDID_BODY_LIMIT = 8 * 1024;

export function edidRoutes(app: FastifyInstance, edid: EdidService): void {
  // The form field `edid` (urlencoded or multipart), else the query's, as GL's handler reads it.
  app.post('/api/upgrade/edid', { bodyLimit: EDID_BODY_LIMIT }, async (request) => {
    const form = await readForm(request);
    const query = (request.query ?? {}) as Record<string, unknown>;
    const field = form['edid'] ?? query['edid'];
    return edid.submit(Array.isArray(field) ? undefined : field);
  });

  app.get('/api/upgrade/get_edid', async () => edid.readState());

  // GL 1.10: a bare JSON array, no envelope (a string body skips the envelope hook).
  app.get('/api/upgrade/edid_list', async (_request, reply) =>
    reply.type('application/json').send(JSON.stringify(edid.list())),
  );
}
