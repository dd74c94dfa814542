/** `/api/info` and its `info` state provider (wire-protocol.md 1.3, 2.3). */
import { machine, release, type, version } from 'node:os';
import type { FastifyInstance } from 'fastify';
import { INFO_FIELDS, type InfoField, type InfoResult } from '@kvm/protocol';
import type { AppContext } from '../context';
import { ValidatorError } from '../errors';
import type { StateProvider } from '../ws/state-registry';

export function buildInfo(ctx: AppContext): InfoResult {
  return {
    system: {
      kvmd: { version: '4.82' },
      product: {
        name: 'KVM console',
        version: ctx.version,
        model: ctx.config.device.model,
        target: ctx.config.target,
      },
      kernel: { system: type(), release: release(), version: version(), machine: machine() },
      platform: {
        type: ctx.config.target,
        base: ctx.config.target === 'qemu' ? 'QEMU virtual machine' : 'Test bed',
        model: ctx.config.device.model,
        serial: '',
      },
      streamer: { app: 'kvm-server', version: ctx.version, features: {} },
    },
    auth: { enabled: true },
    meta: { kvm: {}, server: { host: ctx.host } },
    extras: {},
  };
}

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
    const info = buildInfo(ctx);
    return Object.fromEntries(fields.map((f) => [f, info[f]]));
  });
}

/** kvmd sends `info` one field per frame. Static for now; later subsystems extend extras. */
export function infoProvider(ctx: AppContext): StateProvider {
  return {
    name: 'info',
    snapshot: () => {
      const info = buildInfo(ctx);
      return INFO_FIELDS.map((f) => ({ event_type: 'info', event: { [f]: info[f] } }));
    },
    subscribe: () => () => undefined,
  };
}
