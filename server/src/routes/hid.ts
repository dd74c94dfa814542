/**
 * `/api/hid/*` (wire-protocol.md 1.4): state, parameters, keymaps, paste and the HTTP forms of
 * the input events. HTTP events are not tracked per client: each call leaves nothing pressed
 * unless it asks for a press (`state=true`).
 */
import type { FastifyInstance } from 'fastify';
import {
  ABS_MAX,
  ABS_MIN,
  DELTA_LIMIT,
  KEYMAPS,
  isMouseButton,
  keyByCode,
  type KeymapLayout,
  type KeymapsResult,
  type PrintResult,
} from '@kvm/protocol';
import { textToKeyEvents } from '@kvm/protocol/hid/keymap';
import { ValidatorError } from '../errors';
import type { HidService } from '../services/hid/hid-service';
import { UnknownKeymapError, type KeymapStore } from '../services/hid/keymap-store';
import { bool, fail, int, str } from '../validators';

/** kvmd's default `limit` of /hid/print; 0 means no limit. */
export const PRINT_DEFAULT_LIMIT = 1024;
/** kvmd's `slow`: 20 ms between events. */
const SLOW_DELAY_MS = 20;
const MAX_DELAY_S = 5;

type Query = Record<string, unknown>;

function present(q: Query, key: string): boolean {
  return q[key] !== undefined && q[key] !== '';
}

function webKey(name: string, value: unknown): string {
  const key = str(name, value);
  if (!keyByCode(key)) fail(name, value, 'keyboard key');
  return key;
}

/** Clamps like kvmd: out-of-range numbers are pulled in, not refused. */
function clampedInt(name: string, value: unknown, min: number, max: number): number {
  const n = int(name, value);
  return Math.min(max, Math.max(min, n));
}

/** A float in [0, max] seconds (kvmd's `delay`). */
function seconds(name: string, value: unknown, max: number): number {
  const n = typeof value === 'string' && value.trim() !== '' ? Number(value) : Number.NaN;
  if (!Number.isFinite(n) || n < 0 || n > max) fail(name, value, `float in [0, ${max}]`);
  return n;
}

function charsetOf(contentType: string | undefined): string {
  const match = /charset\s*=\s*"?([\w-]+)"?/i.exec(contentType ?? '');
  return (match?.[1] ?? 'utf-8').toLowerCase();
}

export function hidRoutes(
  app: FastifyInstance,
  deps: { hid: HidService; keymaps: KeymapStore; defaultKeymap: string },
): void {
  const { hid, keymaps } = deps;

  const keymapsResult = (): KeymapsResult => ({
    keymaps: { default: deps.defaultKeymap, available: keymaps.available() },
  });

  async function keymapOf(name: unknown): Promise<Awaited<ReturnType<KeymapStore['get']>>> {
    const wanted = name === undefined || name === '' ? deps.defaultKeymap : str('keymap', name);
    try {
      return await keymaps.get(wanted);
    } catch (err) {
      if (err instanceof UnknownKeymapError)
        fail('keymap', wanted, `keymap of [${KEYMAPS.join(', ')}]`);
      throw err;
    }
  }

  app.get('/api/hid', async () => hid.getState());

  app.post('/api/hid/set_params', async (request) => {
    const q = request.query as Query;
    const state = hid.getState();
    if (present(q, 'keyboard_output')) {
      const output = str('keyboard_output', q['keyboard_output']);
      // The keyboard of our targets has a single output; kvmd refuses outputs it lacks.
      if (output !== state.keyboard.outputs.active) {
        fail(
          'keyboard_output',
          output,
          `value of [${state.keyboard.outputs.available.join(', ')}]`,
        );
      }
    }
    await hid.setParams({
      ...(present(q, 'mouse_output')
        ? { mouseOutput: str('mouse_output', q['mouse_output']) }
        : {}),
      ...(present(q, 'jiggler') ? { jiggler: bool('jiggler', q['jiggler']) } : {}),
    });
    return {};
  });

  app.post('/api/hid/set_connected', async (request) => {
    const q = request.query as Query;
    await hid.setConnected(bool('connected', q['connected']));
    return {};
  });

  app.post('/api/hid/reset', async () => {
    hid.releaseAll();
    return {};
  });

  app.get('/api/hid/keymaps', async () => keymapsResult());

  /** The printable keys of a layout, for the console's virtual keyboard (our addition). */
  app.get('/api/hid/keymap', async (request): Promise<KeymapLayout> => {
    const q = request.query as Query;
    const name = present(q, 'name') ? str('name', q['name']) : deps.defaultKeymap;
    await keymapOf(name);
    return keymaps.layout(name);
  });

  app.post('/api/hid/events/send_key', async (request) => {
    const q = request.query as Query;
    const key = webKey('key', q['key']);
    const state = present(q, 'state') ? bool('state', q['state']) : undefined;
    hid.sendKey(key, state, bool('finish', q['finish'], false));
    return {};
  });

  app.post('/api/hid/events/send_shortcut', async (request) => {
    const q = request.query as Query;
    const raw = str('keys', q['keys']);
    const keys = raw
      .split(',')
      .map((k) => k.trim())
      .filter((k) => k !== '');
    if (keys.length === 0) fail('keys', raw, 'list of keyboard keys');
    // All validated before anything is pressed.
    for (const k of keys) webKey('keys', k);
    hid.sendShortcut(keys);
    return {};
  });

  app.post('/api/hid/events/send_mouse_button', async (request) => {
    const q = request.query as Query;
    const button = str('button', q['button']);
    if (!isMouseButton(button)) fail('button', button, 'mouse button');
    const state = present(q, 'state') ? bool('state', q['state']) : undefined;
    hid.sendMouseButton(button, state);
    return {};
  });

  app.post('/api/hid/events/send_mouse_move', async (request) => {
    const q = request.query as Query;
    hid.handleEvent('http', {
      type: 'mouse_move',
      x: clampedInt('to_x', q['to_x'], ABS_MIN, ABS_MAX),
      y: clampedInt('to_y', q['to_y'], ABS_MIN, ABS_MAX),
    });
    return {};
  });

  for (const [path, type] of [
    ['send_mouse_relative', 'mouse_relative'],
    ['send_mouse_wheel', 'mouse_wheel'],
  ] as const) {
    app.post(`/api/hid/events/${path}`, async (request) => {
      const q = request.query as Query;
      const x = clampedInt('delta_x', q['delta_x'], -DELTA_LIMIT, DELTA_LIMIT);
      const y = clampedInt('delta_y', q['delta_y'], -DELTA_LIMIT, DELTA_LIMIT);
      hid.handleEvent('http', { type, deltas: [{ x, y }], squash: false });
      return {};
    });
  }

  // Paste: the body is raw text whatever its Content-Type says (kvmd reads `req.text()`; curl
  // --data sends form-urlencoded), so this route has its own catch-all body parser.
  void app.register(async (scope) => {
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser('*', { parseAs: 'buffer' }, (_req, body, done) => done(null, body));
    scope.post('/api/hid/print', async (request): Promise<PrintResult> => {
      const q = request.query as Query;
      const limit = int('limit', q['limit'], { min: 0, fallback: PRINT_DEFAULT_LIMIT });
      const keymap = await keymapOf(q['keymap']);
      const slow = bool('slow', q['slow'], false);
      const delayS = present(q, 'delay') ? seconds('delay', q['delay'], MAX_DELAY_S) : null;
      const body = request.body;
      if (!Buffer.isBuffer(body) && body !== undefined && body !== null) {
        throw new ValidatorError('The request body must be text');
      }
      let text: string;
      try {
        text = new TextDecoder(charsetOf(request.headers['content-type']), {
          fatal: true,
        }).decode(body ?? Buffer.alloc(0));
      } catch {
        throw new ValidatorError('The request body is not valid text in its charset');
      }
      if (limit > 0) text = [...text].slice(0, limit).join('');
      const { events, typed, unmapped } = textToKeyEvents(text, keymap);
      const delayMs = delayS !== null ? delayS * 1000 : slow ? SLOW_DELAY_MS : 0;
      await hid.type(events, delayMs);
      return { typed, unmapped };
    });
  });
}
