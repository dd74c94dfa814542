/**
 * Form bodies as kvmd reads them: `application/x-www-form-urlencoded` or `multipart/form-data`
 * text fields. Any other body (JSON included) reads as an empty form, as aiohttp's `post()`
 * does, so the field validators then name the missing argument.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { ApiError, ValidatorError } from '../errors';

export type Form = Record<string, string | string[] | undefined>;

const MAX_FIELDS = 32;
const MAX_FIELD_BYTES = 64 * 1024;

/**
 * Strict percent-decoding: URLSearchParams turns a broken escape (`%E0%A4%A`, a lone `%`) into
 * U+FFFD or keeps it literally, so a bad body would reach the validators as some other value.
 */
function decodeFormPart(text: string): string {
  if (/%(?![0-9A-Fa-f]{2})/.test(text))
    throw new ValidatorError('Malformed form body: bad % escape');
  try {
    return decodeURIComponent(text.replace(/\+/g, ' '));
  } catch {
    throw new ValidatorError('Malformed form body: an escape is not UTF-8');
  }
}

/** Registers the urlencoded parser; multipart comes from @fastify/multipart. */
export function registerFormParser(app: FastifyInstance): void {
  app.addContentTypeParser(
    'application/x-www-form-urlencoded',
    { parseAs: 'string' },
    (_req, body, done) => {
      const form: Form = {};
      let count = 0;
      try {
        for (const pair of (body as string).split('&')) {
          if (pair === '') continue;
          count += 1;
          if (count > MAX_FIELDS) throw new ValidatorError('Too many form fields');
          const eq = pair.indexOf('=');
          const key = decodeFormPart(eq < 0 ? pair : pair.slice(0, eq));
          const value = eq < 0 ? '' : decodeFormPart(pair.slice(eq + 1));
          const prev = form[key];
          form[key] = prev === undefined ? value : ([] as string[]).concat(prev, value);
        }
      } catch (err) {
        done(err as Error, undefined);
        return;
      }
      done(null, form);
    },
  );
}

/** @fastify/multipart's limit errors, as the client's mistakes they are. */
const MULTIPART_LIMITS: Record<string, string> = {
  FST_PARTS_LIMIT: 'Too many form parts',
  FST_FIELDS_LIMIT: 'Too many form fields',
  FST_FILES_LIMIT: 'A file part where only text fields are expected',
  FST_REQ_FILE_TOO_LARGE: 'A file part where only text fields are expected',
};

/**
 * A failure while reading multipart fields: a limit or a parse error is the client's (400); an
 * error with a syscall (the client went away mid-body) is passed on as it is.
 */
function multipartFailure(err: unknown): unknown {
  if (err instanceof ApiError) return err;
  const e = err as { code?: unknown; syscall?: unknown };
  const limit = typeof e.code === 'string' ? MULTIPART_LIMITS[e.code] : undefined;
  if (limit) return new ValidatorError(limit);
  if (e.syscall !== undefined) return err;
  return new ValidatorError('Malformed multipart body');
}

export async function readForm(request: FastifyRequest): Promise<Form> {
  if (request.isMultipart()) {
    const form: Form = {};
    let count = 0;
    try {
      for await (const part of request.parts({
        limits: { fields: MAX_FIELDS, fieldSize: MAX_FIELD_BYTES, files: 0, parts: MAX_FIELDS },
      })) {
        count += 1;
        if (count > MAX_FIELDS) throw new ValidatorError('Too many form fields');
        if (part.type !== 'field') {
          throw new ValidatorError('A file part where only text fields are expected');
        }
        if (part.valueTruncated || part.fieldnameTruncated) {
          throw new ValidatorError(`A form field is longer than ${MAX_FIELD_BYTES} bytes`);
        }
        const value = String(part.value);
        const prev = form[part.fieldname];
        form[part.fieldname] = prev === undefined ? value : ([] as string[]).concat(prev, value);
      }
    } catch (err) {
      throw multipartFailure(err);
    }
    return form;
  }
  const body = request.body;
  const type = request.headers['content-type'] ?? '';
  if (type.startsWith('application/x-www-form-urlencoded') && body && typeof body === 'object') {
    return body as Form;
  }
  return {};
}
