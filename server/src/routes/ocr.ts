/**
 * `GET /api/streamer/ocr` (kvmd 4.82 through 4.2xx): `{ocr: {enabled, langs: {default,
 * available}}}`. The text itself comes from `GET /api/streamer/snapshot?ocr=1` (routes of the
 * snapshot, which read its arguments with parseOcrQuery); rules and limits:
 * services/ocr/ocr-service.ts.
 */
import type { FastifyInstance } from 'fastify';
import { ValidatorError } from '../errors';
import {
  OCR_LANG_NAME,
  OCR_LIMITS,
  langsError,
  type OcrRequest,
  type OcrService,
} from '../services/ocr/ocr-service';
import { int, str } from '../validators';

// kvmd's valid_string_list delimiter.
const LANGS_SPLIT = /[,\t ]+/;

/**
 * The OCR arguments of `GET /api/streamer/snapshot?ocr=1&…` (kvmd: `ocr_langs` split on commas,
 * tabs and spaces, lower-cased; `ocr_left/top/right/bottom` integers, -1 when absent). Whether
 * each language is installed is checked by `recognize`, as kvmd checks it after the snapshot.
 */
export function parseOcrQuery(query: Record<string, unknown>): OcrRequest {
  const raw = str('ocr_langs', query['ocr_langs'], { optional: true }).trim();
  if (raw.length > OCR_LIMITS.langsChars) {
    throw new ValidatorError(`The argument 'ocr_langs' is longer than ${OCR_LIMITS.langsChars}`);
  }
  const langs = raw
    .split(LANGS_SPLIT)
    .filter((l) => l !== '')
    .map((l) => l.toLowerCase());
  if (langs.length > OCR_LIMITS.langs) {
    throw new ValidatorError(`The argument 'ocr_langs' names more than ${OCR_LIMITS.langs}`);
  }
  if (!langs.every((l) => OCR_LANG_NAME.test(l))) throw langsError(langs);
  const edge = (name: string): number =>
    int(name, query[name], { fallback: -1, min: -1_000_000, max: 1_000_000 });
  return {
    langs,
    left: edge('ocr_left'),
    top: edge('ocr_top'),
    right: edge('ocr_right'),
    bottom: edge('ocr_bottom'),
  };
}

export function ocrRoutes(app: FastifyInstance, ocr: OcrService): void {
  app.get('/api/streamer/ocr', async () => ({ ocr: await ocr.state() }));
}
