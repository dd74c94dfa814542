/**
 * `/api/info` (wire-protocol.md 1.3); the answer is built by services/info.ts.
 *
 * Without `legacy` and `fields` (issue 21, item 9): GL's `system, auth, meta, extras`, with
 * `system.platform` where GL's clients read it, and kvmd's default set beside them (kvmd 4.82
 * and 4.197 answer a bare request as `legacy=1`): `hw {health, platform}`, `uptime`, `node`,
 * `fan`. PiKVM's Home Assistant integration reads `hw.platform` from that answer.
 * With `legacy` (kvmd 4.2xx), kvmd's: `legacy=0` answers every field (also `health, uptime,
 * node, fan`); `legacy=1` adds the `hw` alias and drops `health` from the default set, and a
 * requested `hw` takes `platform` out of `system` as kvmd does.
 */
import type { FastifyInstance } from 'fastify';
import { INFO_ALL_FIELDS, INFO_FIELDS, type InfoField, type InfoResult } from '@kvm/protocol';
import type { AppContext } from '../context';
import { ValidatorError } from '../errors';
import { bool } from '../validators';

export type InfoRequestField = InfoField | 'hw';

/** A bare request's fields: GL's four, then kvmd's legacy default (`health` inside `hw`). */
export const INFO_BARE_FIELDS: readonly InfoRequestField[] = [
  ...INFO_FIELDS,
  'hw',
  'uptime',
  'node',
  'fan',
];

export function parseInfoQuery(query: Record<string, unknown>): InfoRequestField[] {
  const kvmd = query['legacy'] !== undefined;
  const legacy = bool('legacy', query['legacy'], true);
  const available: InfoRequestField[] = [...INFO_ALL_FIELDS, ...(legacy ? ['hw' as const] : [])];
  const raw = query['fields'];
  if (raw !== undefined && typeof raw !== 'string')
    throw new ValidatorError("The argument 'fields' is not a valid list of info fields");
  const wanted = (raw ?? '').split(/[\s,]+/).filter(Boolean);
  if (wanted.length === 0) {
    if (!kvmd) return [...INFO_BARE_FIELDS];
    return legacy ? available.filter((f) => f !== 'health') : available;
  }
  for (const f of wanted) {
    if (!(available as readonly string[]).includes(f)) {
      throw new ValidatorError(
        `The argument 'fields' (${JSON.stringify(f.slice(0, 32))}) is not a valid info field (${available.join(', ')})`,
      );
    }
  }
  return [...new Set(wanted)] as InfoRequestField[];
}

/**
 * `keepPlatform`: the bare request keeps `system.platform` (GL's place for it) beside
 * `hw.platform`; a kvmd request moves it, as kvmd does.
 */
export function infoAnswer(
  info: InfoResult,
  fields: InfoRequestField[],
  keepPlatform = false,
): Record<string, unknown> {
  const answer: Record<string, unknown> = {};
  for (const f of fields) if (f !== 'hw') answer[f] = info[f];
  if (fields.includes('hw')) {
    answer['hw'] = { health: info.health, platform: info.system.platform };
    if (answer['system'] && !keepPlatform) {
      const { platform: _moved, ...rest } = info.system;
      answer['system'] = rest;
    }
  }
  return answer;
}

export function infoRoutes(app: FastifyInstance, ctx: AppContext): void {
  app.get('/api/info', async (request) => {
    const query = request.query as Record<string, unknown>;
    const fields = parseInfoQuery(query);
    const bare = query['legacy'] === undefined && !String(query['fields'] ?? '').trim();
    return infoAnswer(ctx.info.build(), fields, bare);
  });
}
