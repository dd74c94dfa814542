/**
 * Paste text (SPEC 7 `POST /api/hid/print`): the device types the text through a keymap and
 * answers how many characters it typed and which ones the keymap cannot type.
 */
import { API_TIMEOUT_MS } from '@kvm/protocol/constants';
import type { PrintResult } from '@kvm/protocol/hid/state';
import type { I18nKey } from '../../i18n/keys';
import { api } from '../../lib/api';

/**
 * SPEC 5 "Pasted text too long": the most characters one paste may carry, kept under the 30 s
 * API timeout (SPEC 9) at the device's typing rate. The QEMU target is slower for long texts
 * (one PS/2 key event every 3 ms, two or more events a character), so the call's timeout also
 * grows with the text: see pasteTimeoutMs.
 */
export const PASTE_MAX_CHARS = 8192;

/** The slowest pace of the device per key event: QEMU's PS/2 gap, and kvmd's `slow` sleep. */
const KEY_EVENT_MS = 3;
const SLOW_KEY_EVENT_MS = 20;
/** Press and release, plus Shift or AltGr toggling around the character at worst. */
const EVENTS_PER_CHAR = 4;

/** Characters as the device counts them: code points, not UTF-16 units. */
export function pasteLength(text: string): number {
  return [...text].length;
}

/** Why the text cannot be sent, or null. */
export function checkPasteText(text: string): I18nKey | null {
  if (text.length === 0) return 'paste.empty';
  if (pasteLength(text) > PASTE_MAX_CHARS) return 'paste.tooLong';
  return null;
}

/**
 * The device answers once the text is typed: the API timeout plus the longest the typing may
 * take, so a long or slow paste is not reported as failed while it is still being typed.
 */
export function pasteTimeoutMs(text: string, slow: boolean): number {
  const perEvent = slow ? SLOW_KEY_EVENT_MS : KEY_EVENT_MS;
  return API_TIMEOUT_MS + pasteLength(text) * EVENTS_PER_CHAR * perEvent;
}

export interface PasteRequest {
  text: string;
  keymap: string;
  /** kvmd's `slow`: a pause before each key event, for targets that miss keys. */
  slow: boolean;
}

/**
 * Sends the text as the raw body with `limit=0` (the device types all of it: the console caps
 * the length itself, so nothing is cut silently).
 */
export function pasteText({ text, keymap, slow }: PasteRequest): Promise<PrintResult> {
  return api.post<PrintResult>('/hid/print', {
    text,
    query: { limit: 0, keymap, slow: slow ? true : undefined },
    timeoutMs: pasteTimeoutMs(text, slow),
  });
}
