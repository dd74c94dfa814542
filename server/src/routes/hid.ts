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
  PRINT_MAX_CHARS,
  isMouseButton,
  keyByCode,
  type KeymapLayout,
  type KeymapsResult,
  type PrintResult,
} from '@kvm/protocol';
import { TextKeyEvents } from '@kvm/protocol/hid/keymap';
import { ConflictError, ValidatorError } from '../errors';
import type { HidService, PasteStop } from '../services/hid/hid-service';
import { UnknownKeymapError, type KeymapStore } from '../services/hid/keymap-store';
import { bool, fail, float, int, str } from '../validators';

/** kvmd's default `limit` of /hid/print; 0 means no limit (up to PRINT_MAX_CHARS). */
export const PRINT_DEFAULT_LIMIT = 1024;
/**
 * The largest /hid/print body: PRINT_MAX_CHARS characters of four bytes each (UTF-8 and UTF-16
 * both need at most four per code point). Larger is 413 PayloadTooLargeError, before any
 * decoding, whatever `limit` says.
 */
export const PRINT_BODY_MAX_BYTES = PRINT_MAX_CHARS * 4;
/** The most keys one send_shortcut presses together (SPEC 3 shortcuts have 2 to 4). */
export const SHORTCUT_KEYS_MAX = 16;
/** A schedule of JIGGLER_PERIODS_MAX periods is under 2 KiB; room for blanks. */
export const JIGGLER_SCHEDULE_BODY_LIMIT = 16 * 1024;
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
  return float(name, value, { min: 0, max });
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

  const keymapsResult = (): KeymapsResult => keymaps.result();

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
    // Answers once the paste (if any) stopped and its keys are up.
    await hid.reset();
    return {};
  });

  /** kvmd 4.2xx: whole seconds since the last input reached the remote computer. */
  app.get('/api/hid/inactivity', async () => ({ inactivity: hid.inactivitySeconds() }));

  /**
   * GL 1.9: JSON `{"periods":[{"start":"HH:MM","end":"HH:MM"},...]}`; a missing `periods` is
   * an empty schedule (GL). Answers `{}` once stored; the `hid` event shows it.
   */
  app.post(
    '/api/hid/set_jiggler_schedule',
    { bodyLimit: JIGGLER_SCHEDULE_BODY_LIMIT },
    async (request) => {
      const body = request.body;
      if (typeof body !== 'object' || body === null || Array.isArray(body)) {
        throw new ValidatorError(
          `The argument 'periods' is missing: send {"periods":[{"start":"HH:MM","end":"HH:MM"}]} as JSON`,
        );
      }
      await hid.setJigglerSchedule((body as Record<string, unknown>)['periods'] ?? []);
      return {};
    },
  );

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
    if (keys.length > SHORTCUT_KEYS_MAX) {
      throw new ValidatorError(`The argument 'keys' lists more than ${SHORTCUT_KEYS_MAX} keys`);
    }
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
    scope.post(
      '/api/hid/print',
      { bodyLimit: PRINT_BODY_MAX_BYTES },
      async (request, reply): Promise<PrintResult> => {
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
        text = clipText(text, limit);
        const delayMs = delayS !== null ? delayS * 1000 : slow ? SLOW_DELAY_MS : 0;

        // The client that leaves stops its paste: nobody is left to see it typed.
        const left = new AbortController();
        const onClose = (): void => {
          if (!reply.raw.writableFinished) left.abort();
        };
        reply.raw.once('close', onClose);
        if (request.raw.socket?.destroyed) left.abort();
        const events = new TextKeyEvents(text, keymap);
        let stopped;
        try {
          stopped = await hid.type(events, {
            delayMs,
            owner: request.auth?.tokenHash ?? null,
            signal: left.signal,
          });
        } finally {
          reply.raw.off('close', onClose);
        }
        if (stopped) throw new HidPasteStoppedError(stopped, events.typed, events.unmapped);
        return { typed: events.typed, unmapped: events.unmapped };
      },
    );
  });
}

const STOP_CAUSES: Readonly<Record<PasteStop, string>> = {
  reset: 'a HID reset',
  replaced: 'a newer paste',
  session: 'the end of its session',
  client: 'its client leaving',
  disconnected: 'the keyboard being disconnected',
  closed: 'the server stopping',
};

/** A paste that did not type all its text (our addition: kvmd's paste cannot be stopped). */
export class HidPasteStoppedError extends ConflictError {
  constructor(reason: PasteStop, typed: number, unmapped: string[]) {
    super(`The paste was stopped by ${STOP_CAUSES[reason]} after ${typed} characters`, {
      reason,
      typed,
      unmapped,
    });
  }
}

/**
 * The text cut to `limit` characters (code points; 0 = no limit, as kvmd), refused when what is
 * left is longer than PRINT_MAX_CHARS: typing is never asked for more than that.
 */
export function clipText(text: string, limit: number): string {
  const wanted = limit > 0 ? limit : Number.POSITIVE_INFINITY;
  let count = 0;
  let end = 0;
  for (const char of text) {
    if (count === wanted) break;
    if (++count > PRINT_MAX_CHARS) {
      throw new ValidatorError(
        `The text to type is longer than ${PRINT_MAX_CHARS} characters (limit=${limit})`,
      );
    }
    end += char.length;
  }
  return end === text.length ? text : text.slice(0, end);
}
