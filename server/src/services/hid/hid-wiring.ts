/**
 * How the HID service meets the rest of the server: its persisted settings and the
 * input it takes from `/api/ws` clients (its state provider is `HidService.provider()`).
 */
import { join } from 'node:path';
import {
  HID_JSON_TYPES,
  HID_OP_KEEPALIVE,
  HID_OP_RELEASE_ALL,
  HID_OP,
  MOUSE_OUTPUT_ABSOLUTE,
  parseJsonHidEvent,
} from '@kvm/protocol';
import { JsonFile } from '../../storage/json-store';
import type { EventHub } from '../../ws/event-hub';
import type { HidService, HidSettings } from './hid-service';

/** `<data_dir>/hid.json`: the jiggler switch and the mouse output survive restarts. */
export function hidSettingsFile(dataDir: string): JsonFile<HidSettings> {
  return new JsonFile(join(dataDir, 'hid.json'), (raw) => {
    const r = (raw ?? {}) as Partial<HidSettings>;
    return {
      jiggler: typeof r.jiggler === 'boolean' ? r.jiggler : false,
      mouseOutput: typeof r.mouseOutput === 'string' ? r.mouseOutput : MOUSE_OUTPUT_ABSOLUTE,
    };
  });
}

/** Input client id of an event socket client. */
export function wsInputClient(id: number): string {
  return `ws:${id}`;
}

/** Input client id of a WebRTC session's data channel. */
export function rtcInputClient(sessionKey: string): string {
  return `rtc:${sessionKey}`;
}

/** Binary ops 1-7 and the JSON HID events of `/api/ws` go to the service. */
export function attachHidInput(hub: EventHub, hid: HidService): void {
  const ops = [...Object.values(HID_OP), HID_OP_RELEASE_ALL, HID_OP_KEEPALIVE];
  for (const op of ops) {
    hub.onBinary(op, (client, frame) => hid.handleFrame(wsInputClient(client.id), frame));
  }
  for (const type of HID_JSON_TYPES) {
    hub.onJson(type, (client, event) => {
      const parsed = parseJsonHidEvent(type, event);
      if (parsed) hid.handleEvent(wsInputClient(client.id), parsed);
    });
  }
  // kvmd releases everything on connect and close; we release what the leaving client held.
  hub.on('disconnect', (client) => hid.clientGone(wsInputClient(client.id)));
}
