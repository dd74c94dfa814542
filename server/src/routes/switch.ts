/**
 * `/api/switch*` (kvmd 4.2xx, PiKVM Switch), served only with `device.pikvm_switch: true`
 * (issue 21, item 8). GL registers these routes only on a model with a Switch (the RM4PE; kvmd's
 * `SwitchApi` is added when `get_hw_model() == "rm4pe"`), and none of SPEC's models (RM1, RM1PE,
 * RM10) has one: by default every `/api/switch*` path is an unknown route (after the session
 * check, 404 in the envelope), so GL's Home Assistant integration does not take the device for
 * a 4-port switch. Turned on, for PiKVM clients, it answers as kvmd 4.2xx with nothing on the
 * chain: `GET /api/switch` is the empty chain's state with the kept colors and EDIDs (the
 * PiKVM UI hides its Switch menu without ports); every action checks its arguments as kvmd
 * does (400 naming the argument); the settings kvmd keeps for a later Switch (`set_colors`,
 * `edids/create|change|remove`) are kept in `<data>/switch.json` (issue 21, item 12); the rest
 * has nothing to act on and answers `{}`.
 */
import type { FastifyInstance } from 'fastify';
import { ATX_BUTTONS, ATX_POWER_ACTIONS } from '@kvm/protocol';
import type { AppConfig } from '../config';
import {
  SWITCH_COLOR_ROLES,
  SwitchSettings,
  SwitchUnknownEdidError,
  type SwitchColorRole,
} from '../services/switch/switch-settings';
import { bool, fail, oneOf } from '../validators';

export { SwitchUnknownEdidError } from '../services/switch/switch-settings';

type Query = Record<string, unknown>;

const EDID_ID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const EDID_DATA_RE = /^([0-9a-f]{256}|[0-9a-f]{512})$/i;
const COLOR_RE = /^[0-9a-f]{6}:[0-9a-f]{2}:[0-9a-f]{4}$/i;

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

export function switchRoutes(
  app: FastifyInstance,
  ctx: { config: Pick<AppConfig, 'data_dir' | 'device'> },
): void {
  if (!ctx.config.device.pikvm_switch) return;
  const q = (request: { query: unknown }) => request.query as Query;
  let opened: Promise<SwitchSettings> | null = null;
  const settings = (): Promise<SwitchSettings> =>
    (opened ??= SwitchSettings.open(ctx.config.data_dir, app.log));

  app.get('/api/switch', async () => (await settings()).state());

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
    const edid = given(query, 'edid_id') ? edidId(query['edid_id'], true) : null;
    if (given(query, 'dummy')) bool('dummy', query['dummy']);
    if (given(query, 'name')) portName(query['name']);
    for (const key of [
      'atx_click_power_delay',
      'atx_click_power_long_delay',
      'atx_click_reset_delay',
    ]) {
      if (given(query, key)) num(key, query[key], 'ATX delay', { min: 0, max: 10 });
    }
    // kvmd: an EDID the library does not have is refused; with no port there is nothing to assign
    if (edid !== null && edid !== 'default' && !(await settings()).has(edid)) {
      throw new SwitchUnknownEdidError();
    }
    return {};
  });

  app.post('/api/switch/set_colors', async (request) => {
    const query = q(request);
    const values: Partial<Record<SwitchColorRole, string>> = {};
    for (const role of SWITCH_COLOR_ROLES) {
      if (!given(query, role)) continue;
      const v = text(role, query[role], 'switch color');
      if (!COLOR_RE.test(v) && v.toLowerCase() !== 'default')
        fail(role, query[role], 'switch color');
      values[role] = v;
    }
    await (await settings()).setColors(values);
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
    // kvmd: any non-empty text; ours at most 255 characters, as a port name
    if (name === '' || name.length > 255) fail('name', query['name'], 'string');
    const data = edidData(query['data']);
    return { id: await (await settings()).createEdid(name, data) };
  });

  app.post('/api/switch/edids/change', async (request) => {
    const query = q(request);
    const id = edidId(query['id'], false);
    const name = given(query, 'name') ? portName(query['name']) : undefined;
    const data = given(query, 'data') ? edidData(query['data']) : undefined;
    // kvmd changes nothing (and checks no id) when neither is given
    if (name !== undefined || data !== undefined) {
      await (await settings()).changeEdid(id, name, data);
    }
    return {};
  });

  app.post('/api/switch/edids/remove', async (request) => {
    await (await settings()).removeEdid(edidId(q(request)['id'], false));
    return {};
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
