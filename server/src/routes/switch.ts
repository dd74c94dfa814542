/**
 * `/api/switch*` (kvmd 4.2xx, PiKVM Switch): this device never has a Switch, so it answers as
 * kvmd does with an empty chain. `GET /api/switch` is the empty state (protocol/switch.ts; the
 * PiKVM UI then hides its Switch menu). Every action checks its arguments as kvmd does (400
 * naming the argument) and then, like kvmd with no Switch on the port, has nothing to act on:
 * it answers `{}`. The only EDID is `default`, so changing or removing any other is kvmd's
 * SwitchUnknownEdidError, and creating one (which kvmd would keep for a later Switch) is
 * SwitchNotFoundError: nothing is stored here.
 */
import type { FastifyInstance } from 'fastify';
import { ATX_BUTTONS, ATX_POWER_ACTIONS } from '@kvm/protocol';
import { noSwitchState } from '@kvm/protocol/switch';
import { BadRequestError } from '../errors';
import { bool, fail, oneOf } from '../validators';

/** kvmd: `No specified EDID ID found`. */
export class SwitchUnknownEdidError extends BadRequestError {
  static override readonly defaultMessage = 'No specified EDID ID found';
}

/** Ours: an operation that would keep something for a Switch that is not there. */
export class SwitchNotFoundError extends BadRequestError {
  static override readonly defaultMessage = 'No PiKVM Switch is connected';
}

type Query = Record<string, unknown>;

const EDID_ID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const EDID_DATA_RE = /^([0-9a-f]{256}|[0-9a-f]{512})$/i;
const COLOR_RE = /^[0-9a-f]{6}:[0-9a-f]{2}:[0-9a-f]{4}$/i;
const COLOR_ROLES = ['inactive', 'active', 'flashing', 'beacon', 'bootloader'] as const;

function given(q: Query, key: string): boolean {
  return q[key] !== undefined;
}

function text(name: string, value: unknown, what: string): string {
  if (typeof value !== 'string') fail(name, value, what);
  return value.trim();
}

/** kvmd's valid_number: a finite number in [min, max] (integer when `integer`). */
function num(
  name: string,
  value: unknown,
  what: string,
  opts: { min: number; max?: number; integer?: boolean },
): number {
  const v = text(name, value, what);
  const pattern = opts.integer ? /^[+-]?\d+$/ : /^[+-]?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?$/i;
  const n = pattern.test(v) ? Number(v) : Number.NaN;
  if (!Number.isFinite(n) || n < opts.min || (opts.max !== undefined && n > opts.max)) {
    fail(name, value, what);
  }
  return n;
}

const port = (q: Query) => num('port', q['port'], 'float', { min: 0 });
const unit = (q: Query, key: string) => num(key, q[key], 'int', { min: 0, integer: true });

function edidId(value: unknown, allowDefault: boolean): string {
  const v = typeof value === 'string' ? value.trim() : value;
  if (typeof v !== 'string' || !(EDID_ID_RE.test(v) || (allowDefault && v === 'default'))) {
    fail('id', value, 'switch EDID ID');
  }
  return v.toLowerCase();
}

function edidData(value: unknown): string {
  const v = text('data', value, 'switch EDID data').replace(/\s/g, '');
  if (!EDID_DATA_RE.test(v)) fail('data', value, 'switch EDID data');
  return v.toUpperCase();
}

function portName(value: unknown): string {
  // kvmd keeps printable characters, at most 255 of them, blanks squeezed.
  return text('name', value, 'switch port name').replace(/\s+/g, ' ').slice(0, 255).trim();
}

export function switchRoutes(app: FastifyInstance): void {
  const q = (request: { query: unknown }) => request.query as Query;

  app.get('/api/switch', async () => noSwitchState());

  app.post('/api/switch/set_active_prev', async () => ({}));
  app.post('/api/switch/set_active_next', async () => ({}));

  app.post('/api/switch/set_active', async (request) => {
    port(q(request));
    return {};
  });

  app.post('/api/switch/set_beacon', async (request) => {
    const query = q(request);
    bool('state', query['state']);
    if (given(query, 'port')) port(query);
    else if (given(query, 'uplink')) unit(query, 'uplink');
    else unit(query, 'downlink');
    return {};
  });

  app.post('/api/switch/set_port_params', async (request) => {
    const query = q(request);
    port(query);
    if (given(query, 'edid_id') && edidId(query['edid_id'], true) !== 'default') {
      throw new SwitchUnknownEdidError();
    }
    if (given(query, 'dummy')) bool('dummy', query['dummy']);
    if (given(query, 'name')) portName(query['name']);
    for (const key of [
      'atx_click_power_delay',
      'atx_click_power_long_delay',
      'atx_click_reset_delay',
    ]) {
      if (given(query, key)) num(key, query[key], 'ATX delay', { min: 0, max: 10 });
    }
    return {};
  });

  app.post('/api/switch/set_colors', async (request) => {
    const query = q(request);
    for (const role of COLOR_ROLES) {
      if (!given(query, role)) continue;
      const v = text(role, query[role], 'switch color');
      if (!COLOR_RE.test(v) && v.toLowerCase() !== 'default')
        fail(role, query[role], 'switch color');
    }
    return {};
  });

  app.post('/api/switch/reset', async (request) => {
    const query = q(request);
    unit(query, 'unit');
    bool('bootloader', query['bootloader'], false);
    return {};
  });

  app.post('/api/switch/edids/create', async (request) => {
    const query = q(request);
    const name = text('name', query['name'], 'string');
    if (name === '') fail('name', query['name'], 'string');
    edidData(query['data']);
    throw new SwitchNotFoundError();
  });

  app.post('/api/switch/edids/change', async (request) => {
    const query = q(request);
    edidId(query['id'], false);
    if (given(query, 'name')) portName(query['name']);
    if (given(query, 'data')) edidData(query['data']);
    // Only `default` exists, and it is refused above: every other id is unknown.
    if (given(query, 'name') || given(query, 'data')) throw new SwitchUnknownEdidError();
    return {};
  });

  app.post('/api/switch/edids/remove', async (request) => {
    edidId(q(request)['id'], false);
    throw new SwitchUnknownEdidError();
  });

  app.post('/api/switch/atx/power', async (request) => {
    const query = q(request);
    port(query);
    oneOf('action', query['action'], ATX_POWER_ACTIONS);
    return {};
  });

  app.post('/api/switch/atx/click', async (request) => {
    const query = q(request);
    port(query);
    oneOf('button', query['button'], ATX_BUTTONS);
    return {};
  });
}
