/**
 * `GET /api/streamer/ocr` (kvmd 4.82 through 4.2xx): `{ocr: {enabled, langs: {default,
 * available}}}`. The text itself comes from `GET /api/streamer/snapshot?ocr=1` (routes of the
 * snapshot); rules and limits: services/ocr/ocr-service.ts.
 */
import type { FastifyInstance } from 'fastify';
import type { OcrService } from '../services/ocr/ocr-service';

export function ocrRoutes(app: FastifyInstance, ocr: OcrService): void {
  app.get('/api/streamer/ocr', async () => ({ ocr: await ocr.state() }));
}
