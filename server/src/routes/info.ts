/** `/api/info` (wire-protocol.md 1.3); the answer is built by services/info.ts. */
import type { FastifyInstance } from 'fastify';
import { INFO_FIELDS, type InfoField } from '@kvm/protocol';
import type { AppContext } from '../context';
import { ValidatorError } from '../errors';

export function parseInfoFields(raw: unknown): InfoField[] {
  if (raw === undefined || raw === '') return [...INFO_FIELDS];
  if (typeof raw !== 'string')
    throw new ValidatorError("The argument 'fields' is not a valid list of info fields");
  const wanted = raw.split(/[\s,]+/).filter(Boolean);
  for (const f of wanted) {
    if (!(INFO_FIELDS as readonly string[]).includes(f)) {
      throw new ValidatorError(
        `The argument 'fields' (${JSON.stringify(f)}) is not a valid info field (${INFO_FIELDS.join(', ')})`,
      );
    }
  }
  return [...new Set(wanted)] as InfoField[];
}

export function infoRoutes(app: FastifyInstance, ctx: AppContext): void {
  app.get('/api/info', async (request) => {
    const fields = parseInfoFields((request.query as Record<string, unknown>)['fields']);
    const info = ctx.info.build();
    return Object.fromEntries(fields.map((f) => [f, info[f]]));
  });
}
