/**
 * Form bodies as kvmd reads them: `application/x-www-form-urlencoded` or `multipart/form-data`
 * text fields. Any other body (JSON included) reads as an empty form, as aiohttp's `post()`
 * does, so the field validators then name the missing argument.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { ValidatorError } from '../errors';

export type Form = Record<string, string | string[] | undefined>;

const MAX_FIELDS = 32;
const MAX_FIELD_BYTES = 64 * 1024;

/** Registers the urlencoded parser; multipart comes from @fastify/multipart. */
export function registerFormParser(app: FastifyInstance): void {
  app.addContentTypeParser(
    'application/x-www-form-urlencoded',
    { parseAs: 'string' },
    (_req, body, done) => {
      const form: Form = {};
      const params = new URLSearchParams(body as string);
      let count = 0;
      for (const [key, value] of params) {
        count += 1;
        if (count > MAX_FIELDS) {
          done(new ValidatorError('Too many form fields'), undefined);
          return;
        }
        const prev = form[key];
        form[key] = prev === undefined ? value : ([] as string[]).concat(prev, value);
      }
      done(null, form);
    },
  );
}

export async function readForm(request: FastifyRequest): Promise<Form> {
  if (request.isMultipart()) {
    const form: Form = {};
    let count = 0;
    for await (const part of request.parts({
      limits: { fields: MAX_FIELDS, fieldSize: MAX_FIELD_BYTES, files: 0 },
    })) {
      count += 1;
      if (count > MAX_FIELDS) throw new ValidatorError('Too many form fields');
      if (part.type === 'field') {
        const value = String(part.value);
        const prev = form[part.fieldname];
        form[part.fieldname] = prev === undefined ? value : ([] as string[]).concat(prev, value);
      }
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
