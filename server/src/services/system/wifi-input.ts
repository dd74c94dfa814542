/**
 * The Wi-Fi routes' arguments (GL `/api/repeater/*`, wire-protocol §5.8 and §5.13): the route
 * parses and validates the JSON body (and `remove_saved_ap`'s query) here and hands WifiService
 * a typed join request or SSID. Messages are GL's and ours, unchanged on the wire.
 */
import {
  WIFI_KEY_MAX,
  WIFI_KEY_MIN,
  WIFI_SSID_MAX_BYTES,
  isValidWpaKey,
  wifiSsidProblem,
} from '@kvm/protocol';
import { BadRequestError } from '../../errors';
import type { WifiConnectRequest } from '../../drivers/wifi/types';

const BSSID = /^[0-9a-fA-F]{2}(:[0-9a-fA-F]{2}){5}$/;

function requireObject(body: unknown): Record<string, unknown> {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) {
    throw new BadRequestError('Configuration data must be in JSON object format');
  }
  return body as Record<string, unknown>;
}

/**
 * An SSID is any 1 to 32 bytes on air: `--help` or `"; id; "` are names like others (the driver
 * hands them to the radio as values, never as arguments). Refused is only what no radio takes or
 * no command line carries.
 */
function ssidOf(body: Record<string, unknown>): string {
  const ssid = body['ssid'];
  if (ssid === undefined || ssid === null || ssid === '') throw new BadRequestError('Missing SSID');
  if (typeof ssid !== 'string') throw new BadRequestError('ssid must be a string');
  switch (wifiSsidProblem(ssid)) {
    case 'long':
      throw new BadRequestError(`ssid is longer than ${WIFI_SSID_MAX_BYTES} bytes`);
    case 'nul':
      throw new BadRequestError('ssid cannot contain a NUL character');
    case 'unpaired':
      throw new BadRequestError('ssid is not valid Unicode (an unpaired surrogate)');
    default:
      return ssid;
  }
}

/** WPA: 8 to 63 printable ASCII characters, or 64 hex digits (the raw PSK). */
function keyOf(body: Record<string, unknown>): string | undefined {
  const key = body['key'];
  if (key === undefined || key === null || key === '') return undefined;
  if (typeof key !== 'string') throw new BadRequestError('key must be a string');
  if (!isValidWpaKey(key)) {
    throw new BadRequestError(
      `key must be ${WIFI_KEY_MIN} to ${WIFI_KEY_MAX - 1} printable ASCII characters or ${WIFI_KEY_MAX} hex digits`,
    );
  }
  return key;
}

/**
 * `connect`'s JSON object body → the join: `ssid`, `key`, `bssid`, `hidden` (only exactly
 * `true`) and `remember` (on unless `false` or `0`).
 */
export function parseWifiJoin(raw: unknown): WifiConnectRequest & { remember: boolean } {
  const body = requireObject(raw);
  const ssid = ssidOf(body);
  const key = keyOf(body);
  const hidden = body['hidden'] === true;
  const bssid = typeof body['bssid'] === 'string' ? body['bssid'] : undefined;
  if (bssid !== undefined && !BSSID.test(bssid)) {
    throw new BadRequestError('bssid must be six pairs of hex digits separated by colons');
  }
  const remember = body['remember'] !== false && body['remember'] !== 0;
  return {
    ssid,
    ...(key !== undefined ? { key } : {}),
    ...(bssid !== undefined ? { bssid } : {}),
    ...(hidden ? { hidden } : {}),
    remember,
  };
}

/** `remove_saved_ap`: the SSID from the JSON body, else from the query (GL reads either). */
export function parseWifiForget(rawBody: unknown, query: Record<string, unknown>): string {
  const body = rawBody === undefined || rawBody === null ? {} : requireObject(rawBody);
  return ssidOf(body['ssid'] !== undefined ? body : query);
}
